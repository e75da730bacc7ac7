/**
 * The areas a visual `change` step needs, measured when the image is taken (one evaluate for
 * every visual step): the box of its `selector` (the region compared; none: the whole image)
 * and the boxes of every element its `ignore_selectors` match (masked before comparing, in
 * this capture and in the one it is compared with). Boxes are CSS pixels from the image's top
 * left corner: the clip's origin for a full page or an element capture, the viewport's for a
 * viewport capture. Stored with the reading; the notifier scales them by the image's pixels.
 */
import { serviceError } from '../../shared/errors';
import type { ChangeReading } from './actions';
import type { PageSession } from './page-session';

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

type Measured = { region: Box | null; masks: Box[] } | { missing: string } | { invalid: string };

/** Runs in the page: the boxes of each step's region and masks, relative to `origin` (null: the viewport). */
export function pageMeasureVisual(steps: Array<{ selector: string; ignore: string[] }>, origin: { x: number; y: number } | null): Measured[] {
  const box = (el: Element): { x: number; y: number; width: number; height: number } => {
    const r = el.getBoundingClientRect();
    const dx = origin ? window.scrollX - origin.x : 0;
    const dy = origin ? window.scrollY - origin.y : 0;
    return { x: r.left + dx, y: r.top + dy, width: r.width, height: r.height };
  };
  const all = (selector: string): Element[] | null => {
    try {
      return Array.from(document.querySelectorAll(selector));
    } catch {
      return null;
    }
  };
  return steps.map(({ selector, ignore }) => {
    let region = null;
    if (selector) {
      const found = all(selector);
      if (!found) return { invalid: selector };
      const first = found[0];
      if (!first) return { missing: selector };
      region = box(first);
    }
    const masks = [];
    for (const s of ignore) {
      const found = all(s);
      if (!found) return { invalid: s };
      for (const el of found) {
        const b = box(el);
        if (b.width > 0 && b.height > 0) masks.push(b);
      }
    }
    return { region, masks };
  });
}

/**
 * Fills in the region and masks of the visual readings among `changes`; `clip` is the area the
 * screenshot took (null: the viewport, `viewportWidth` CSS pixels wide).
 */
export async function measureVisual(page: PageSession, changes: ChangeReading[] | undefined, clip: Box | null, viewportWidth: number): Promise<void> {
  const visual = (changes ?? []).filter((c) => c.visual);
  if (!visual.length) return;
  const measured = await page.run(
    pageMeasureVisual,
    visual.map((c) => ({ selector: c.selector, ignore: c.visual?.ignore_selectors ?? [] })),
    clip ? { x: clip.x, y: clip.y } : null,
  );
  visual.forEach((c, i) => {
    const m = measured[i];
    const where = `multi_step_actions[${c.index}] (change)`;
    if (!m || !c.visual) return;
    if ('invalid' in m) throw serviceError('invalid_parameter', `${where}: ${JSON.stringify(m.invalid)} is not a valid CSS selector.`, { step: c.index });
    if ('missing' in m)
      throw serviceError('action_failed', `${where}: no element matches ${JSON.stringify(m.missing)} on the page when the image was taken.`, { step: c.index });
    c.visual.region = m.region;
    c.visual.masks = m.masks;
    c.visual.frameWidth = clip ? clip.width : viewportWidth;
  });
}
