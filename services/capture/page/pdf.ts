/**
 * A capture printed as a PDF (image_format=pdf): at the viewport's width on one sheet as tall
 * as the viewport (or the whole page, with fullpage), or, with a paper (pdf_paper_format, or
 * pdf_paper_width and pdf_paper_height), the whole document on sheets of it, its lazy content
 * loaded first as a full page's is (full-page.ts). The pdf_* options set the rest of Chromium's
 * Page.printToPDF: orientation, margins, scale, backgrounds, page ranges, header and footer.
 */
import { serviceError } from '../../shared/errors';
import { type PDF_PAPER_FORMATS, type SnapOptions, pdfOptionsProblem } from '../../shared/screenshot-options';
import { CdpError } from './cdp';
import type { PageSession } from './page-session';

/** Each paper's size in inches, portrait (as Chromium's print dialog has them). */
const PAPER_INCHES: Record<(typeof PDF_PAPER_FORMATS)[number], readonly [number, number]> = {
  letter: [8.5, 11],
  legal: [8.5, 14],
  tabloid: [11, 17],
  ledger: [17, 11],
  a0: [33.1, 46.8],
  a1: [23.4, 33.1],
  a2: [16.54, 23.4],
  a3: [11.7, 16.54],
  a4: [8.27, 11.7],
  a5: [5.83, 8.27],
  a6: [4.13, 5.83],
};

const PER_INCH: Record<string, number> = { in: 1, px: 96, cm: 2.54, mm: 25.4 };

/** A PDF length as the options give it (PDF_LENGTH_PATTERN: 8.5in, 210mm, 1cm, 20px), in inches. */
export function inches(length: string): number {
  const m = /^([0-9.]+)(px|in|cm|mm)$/.exec(length);
  if (!m) throw new Error(`not a PDF length: ${length}`);
  return Number(m[1]) / (PER_INCH[m[2] as string] as number);
}

/** Whether the options name a paper: the whole document printed on sheets of it, its lazy content loaded first. */
export function printsOnPaper(o: SnapOptions): boolean {
  return (o.image_format ?? 'jpeg') === 'pdf' && (o.pdf_paper_format !== undefined || o.pdf_paper_width !== undefined);
}

/**
 * Refuses PDF options a capture in another format was given (a stored configuration whose
 * image_format was changed by a PATCH that kept them): the request checks the rest.
 */
export function refuseStrayPdfOptions(o: SnapOptions): void {
  const problem = pdfOptionsProblem(o as Record<string, unknown>, o.image_format ?? 'jpeg');
  if (problem) throw serviceError('invalid_parameter', problem.note, { param: problem.param });
}

/** Page.printToPDF's parameters for these options; `viewportSheet` is the sheet (inches) when no paper is named. */
export function printParams(o: SnapOptions, viewportSheet: { width: number; height: number }): Record<string, unknown> {
  const margin = (side: 'top' | 'right' | 'bottom' | 'left') => {
    const given = o[`pdf_margin_${side}`] ?? o.pdf_margin;
    return given === undefined ? 0 : inches(given);
  };
  const paper =
    o.pdf_paper_format !== undefined
      ? PAPER_INCHES[o.pdf_paper_format]
      : o.pdf_paper_width !== undefined && o.pdf_paper_height !== undefined
        ? [inches(o.pdf_paper_width), inches(o.pdf_paper_height)]
        : [viewportSheet.width, viewportSheet.height];
  const header = o.pdf_header_template;
  const footer = o.pdf_footer_template;
  return {
    paperWidth: paper[0],
    paperHeight: paper[1],
    landscape: o.pdf_landscape ?? false,
    marginTop: margin('top'),
    marginRight: margin('right'),
    marginBottom: margin('bottom'),
    marginLeft: margin('left'),
    scale: o.pdf_scale ?? 1,
    printBackground: o.pdf_print_background ?? true,
    ...(o.pdf_page_ranges !== undefined ? { pageRanges: o.pdf_page_ranges.replace(/ /g, '') } : {}),
    ...(header !== undefined || footer !== undefined
      ? { displayHeaderFooter: true, headerTemplate: header ?? '<span></span>', footerTemplate: footer ?? '<span></span>' }
      : {}),
  };
}

/**
 * Prints the page. What Chromium refuses of the options (a page range past the document's end,
 * margins that leave no room for the content) is the caller's to fix: 400 invalid_parameter
 * with Chromium's reason, never a 500.
 */
export async function printPdf(page: PageSession, o: SnapOptions, viewportSheet: { width: number; height: number }): Promise<Buffer> {
  try {
    return await page.sendForData('Page.printToPDF', printParams(o, viewportSheet));
  } catch (err) {
    if (err instanceof CdpError && /page range|print parameters|content area|margin|paper/i.test(err.message)) {
      const reason = err.message.replace(/^Page\.printToPDF: /, '');
      const param = /page range/i.test(reason) ? 'pdf_page_ranges' : /margin|content area/i.test(reason) ? 'pdf_margin' : 'pdf_paper_format';
      throw serviceError('invalid_parameter', `${param}: the browser could not print the page with these PDF options (${reason}); change ${param}.`, { param });
    }
    throw err;
  }
}
