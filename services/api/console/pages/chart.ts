/**
 * The overview's chart: captures per day of the month as SVG bars, drawn on the server (no
 * script, no inline style: the bars' colour comes from the style sheet). Each bar has a
 * <title> (a tooltip, read by screen readers); the same numbers are given as a table beside it.
 */
import type { DailyCount } from '../../../shared/contracts';
import { html, type SafeHtml } from '../html';

const BAR = 20;
const GAP = 4;
const HEIGHT = 160;
const TOP = 14;
const BOTTOM = 18;

export interface DayValue {
  day: number;
  value: number;
}

/** Every day of the month from 1 to `days`, with the counts of the days that had any. */
export function daysOfMonth(monthStartMs: number, days: number, counts: DailyCount[]): DayValue[] {
  const byDay = new Map(counts.map((c) => [Math.round((c.day_ms - monthStartMs) / 86_400_000) + 1, c.screenshots]));
  return Array.from({ length: days }, (_, i) => ({ day: i + 1, value: byDay.get(i + 1) ?? 0 }));
}

/** The bars of `values` (one per day), `label` naming the chart for assistive technology. */
export function barChart(values: DayValue[], label: string, monthName: string): SafeHtml {
  const max = Math.max(1, ...values.map((v) => v.value));
  const width = values.length * (BAR + GAP) + GAP;
  const plot = HEIGHT - TOP - BOTTOM;
  const bars = values.map((v, i) => {
    const h = v.value === 0 ? 0 : Math.max(2, Math.round((v.value / max) * plot));
    const x = GAP + i * (BAR + GAP);
    const y = TOP + plot - h;
    const tick = v.day === 1 || v.day % 5 === 0 ? html`<text x="${x + BAR / 2}" y="${HEIGHT - 4}" text-anchor="middle">${v.day}</text>` : '';
    return html`<g><rect class="bar" x="${x}" y="${y}" width="${BAR}" height="${h}"><title>${monthName} ${v.day}: ${v.value} ${v.value === 1 ? 'capture' : 'captures'}</title></rect>${tick}</g>`;
  });
  return html`<svg class="chart" viewBox="0 0 ${width} ${HEIGHT}" role="img" aria-label="${label}" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">
<text x="${GAP}" y="10">${max}</text>
<line class="axis" x1="0" y1="${TOP + plot + 0.5}" x2="${width}" y2="${TOP + plot + 0.5}"/>
${bars}
</svg>`;
}
