/**
 * The quality corpus: every page, by theme. To add a page, add a QualityPage (page.ts) to a
 * theme's list (or a new pages-<theme>.ts listed here); quality.test.ts and `npm run quality`
 * take it from here.
 */
import { checkPages } from './corpus';
import type { QualityPage } from './page';
import { DYNAMIC_PAGES } from './pages-dynamic';
import { ELEMENT_PAGES } from './pages-elements';
import { ERROR_PAGES } from './pages-errors';
import { FAILURE_PAGES } from './pages-failures';
import { FONT_PAGES } from './pages-fonts';
import { FULLPAGE_PAGES } from './pages-fullpage';
import { LAYOUT_PAGES } from './pages-layout';
import { OVERLAY_PAGES } from './pages-overlays';
import { SCRIPT_PAGES } from './pages-scripts';

export const QUALITY_PAGES: readonly QualityPage[] = [
  ...SCRIPT_PAGES,
  ...FONT_PAGES,
  ...FULLPAGE_PAGES,
  ...LAYOUT_PAGES,
  ...ELEMENT_PAGES,
  ...DYNAMIC_PAGES,
  ...OVERLAY_PAGES,
  ...ERROR_PAGES,
  ...FAILURE_PAGES,
];

checkPages(QUALITY_PAGES);

/** The pages whose name contains one of `filters` (all of them when there is none). */
export function selectPages(filters: readonly string[]): QualityPage[] {
  return QUALITY_PAGES.filter((p) => filters.length === 0 || filters.some((f) => p.name.includes(f)));
}
