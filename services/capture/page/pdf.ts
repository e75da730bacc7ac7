/**
 * A capture printed as a PDF (image_format=pdf): at the viewport's width on one sheet as tall
 * as the viewport (or the whole page, with fullpage), or, with a paper (pdf_paper_format, or
 * pdf_paper_width and pdf_paper_height), the whole document on sheets of it, its lazy content
 * loaded first as a full page's is (full-page.ts). The pdf_* options set the rest of Chromium's
 * Page.printToPDF: orientation, margins, scale, backgrounds, page ranges, header and footer.
 */
import { serviceError } from '../../shared/errors';
import { type PDF_PAPER_FORMATS, type SnapOptions, pdfLengthInches, pdfOptionsProblem } from '../../shared/screenshot-options';
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

/** A PDF length as the options give it (PDF_LENGTH_PATTERN: 8.5in, 210mm, 1cm, 20px), in inches. */
export function inches(length: string): number {
  const size = pdfLengthInches(length);
  if (size === null) throw new Error(`not a PDF length: ${length}`);
  return size;
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

/** The options of `names` the capture was given. */
function given(o: SnapOptions, names: ReadonlyArray<keyof SnapOptions>): string[] {
  return names.filter((name) => o[name] !== undefined);
}

const MARGIN_OPTIONS = ['pdf_margin', 'pdf_margin_top', 'pdf_margin_right', 'pdf_margin_bottom', 'pdf_margin_left'] as const;
const PAPER_OPTIONS = ['pdf_paper_format', 'pdf_paper_width', 'pdf_paper_height', 'pdf_landscape'] as const;

/**
 * The pages of a PDF as Chromium writes it (Skia's writer: one `/Type /Page` dictionary per
 * page, no object streams), without reading the whole document.
 */
export function pageCount(pdf: Buffer): number {
  return pdf.toString('latin1').match(/\/Type\s*\/Page(?![A-Za-z])/g)?.length ?? 0;
}

/** The pages pdf_page_ranges names (validated: "1-3, 5"), as sorted, merged ranges. */
function rangesOf(pageRanges: string): Array<[number, number]> {
  const ranges = pageRanges
    .replace(/ /g, '')
    .split(',')
    .map((part): [number, number] => {
      const [from, to] = part.split('-').map(Number) as [number, number?];
      return [from, to ?? from];
    })
    .sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of ranges) {
    const last = merged[merged.length - 1];
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/**
 * Chromium prints what a range names up to the document's last page and leaves out the rest
 * (a range wholly past the end it refuses itself). A range that runs past the end prints to the
 * last page, as "from here on" (8-20 on ten pages: 8 to 10); a page or range that starts past it
 * names nothing there, and is refused rather than silently left out. `printed`: the pages the
 * PDF has, the first `printed` of the pages named (in order) are those the document has.
 */
export function pageRangesProblem(pageRanges: string, printed: number): string | null {
  const ranges = rangesOf(pageRanges);
  let left = printed;
  let firstMissing: number | null = null;
  for (const [from, to] of ranges) {
    const span = to - from + 1;
    if (left < span) {
      firstMissing = from + left;
      break;
    }
    left -= span;
  }
  if (firstMissing === null) return null;
  const startsPast = pageRanges
    .replace(/ /g, '')
    .split(',')
    .map((part) => Number(part.split('-')[0]))
    .filter((from) => from >= (firstMissing as number))
    .sort((a, b) => a - b);
  if (startsPast.length === 0) return null;
  return (
    `pdf_page_ranges: the document has fewer than ${startsPast[0]} pages (${firstMissing - 1} at most), so ${startsPast[0]} names none of its pages; ` +
    'name pages it has (a range may run past the end: 2-999 prints from page 2 to the last).'
  );
}

/**
 * Prints the page. What Chromium refuses of the options (a page range past the document's end,
 * margins that leave no room for the content) is the caller's to fix: 400 invalid_parameter
 * naming the options given that it comes from, with Chromium's reason, never a 500.
 */
export async function printPdf(page: PageSession, o: SnapOptions, viewportSheet: { width: number; height: number }): Promise<Buffer> {
  let pdf: Buffer;
  try {
    pdf = await page.sendForData('Page.printToPDF', printParams(o, viewportSheet));
  } catch (err) {
    if (err instanceof CdpError && /page range|print parameters|content area|margin|paper/i.test(err.message)) {
      const reason = err.message.replace(/^Page\.printToPDF: /, '');
      const margins = given(o, MARGIN_OPTIONS);
      const paper = given(o, PAPER_OPTIONS);
      const names = /page range/i.test(reason)
        ? ['pdf_page_ranges']
        : /margin|content area/i.test(reason) && margins.length
          ? margins
          : paper.length
            ? paper
            : margins;
      const [param] = names;
      if (param === undefined) throw err;
      throw serviceError(
        'invalid_parameter',
        `${param}: the browser could not print the page with these PDF options (${reason}); change ${names.join(' or ')}.`,
        {
          param,
        },
      );
    }
    throw err;
  }
  const problem = o.pdf_page_ranges === undefined ? null : pageRangesProblem(o.pdf_page_ranges, pageCount(pdf));
  if (problem) throw serviceError('invalid_parameter', problem, { param: 'pdf_page_ranges' });
  return pdf;
}
