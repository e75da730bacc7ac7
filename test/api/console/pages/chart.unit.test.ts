/** The overview's chart: one bar per day of the month, scaled to the busiest day, each with its number as a tooltip. */
import { expect } from 'chai';
import { barChart, daysOfMonth } from '../../../../services/api/console/pages/chart';

describe('console chart', () => {
  const start = Date.UTC(2026, 10, 1);

  it('gives every day of the month, with the counts of the days that had captures', () => {
    const days = daysOfMonth(start, 30, [
      { day_ms: start, screenshots: 4 },
      { day_ms: start + 2 * 86_400_000, screenshots: 1 },
    ]);
    expect(days).to.have.length(30);
    expect(days.slice(0, 4)).to.deep.equal([
      { day: 1, value: 4 },
      { day: 2, value: 0 },
      { day: 3, value: 1 },
      { day: 4, value: 0 },
    ]);
  });

  it('draws a bar per day, the busiest the full height, each titled, with no inline style', () => {
    const svg = barChart(
      daysOfMonth(start, 30, [
        { day_ms: start, screenshots: 4 },
        { day_ms: start + 86_400_000, screenshots: 1 },
      ]),
      'Captures <x>',
      'November',
    ).text;
    const heights = [...svg.matchAll(/<rect class="bar" x="[\d.]+" y="[\d.]+" width="20" height="(\d+)">/g)].map((m) => Number(m[1]));
    expect(heights).to.have.length(30);
    expect(heights[0]).to.equal(128);
    expect(heights[1]).to.equal(32);
    expect(heights.slice(2).every((h) => h === 0)).to.equal(true);
    expect(svg).to.contain('<title>November 1: 4 captures</title>').and.contain('<title>November 2: 1 capture</title>');
    expect(svg).to.contain('role="img" aria-label="Captures &lt;x&gt;"');
    expect(svg).not.to.contain('style=');
  });
});
