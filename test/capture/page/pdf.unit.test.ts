/**
 * The PDF options' mapping onto Chromium's Page.printToPDF, and the rules on which options go
 * together: every option moves its parameter, and nothing is sent that no option asked for.
 * The PDFs themselves, read back, are in pdf.test.ts.
 */
import { expect } from 'chai';
import { inches, printParams, printsOnPaper, refuseStrayPdfOptions } from '../../../services/capture/page/pdf';
import type { SnapOptions } from '../../../services/shared/screenshot-options';

const sheet = { width: 20, height: 11.25 };
const pdf = (o: Partial<SnapOptions>): SnapOptions => ({ url: 'https://example.test/', image_format: 'pdf', ...o });

describe('PDF options (the printToPDF parameters)', () => {
  it('prints at the viewport sheet, no margins, backgrounds on, when no option is given (as before the options)', () => {
    expect(printParams(pdf({}), sheet)).to.deep.equal({
      paperWidth: 20,
      paperHeight: 11.25,
      landscape: false,
      marginTop: 0,
      marginRight: 0,
      marginBottom: 0,
      marginLeft: 0,
      scale: 1,
      printBackground: true,
    });
    expect(printsOnPaper(pdf({}))).to.equal(false);
  });

  it('reads lengths in px, in, cm and mm', () => {
    expect(inches('96px')).to.equal(1);
    expect(inches('8.5in')).to.equal(8.5);
    expect(inches('2.54cm')).to.be.closeTo(1, 1e-9);
    expect(inches('25.4mm')).to.be.closeTo(1, 1e-9);
  });

  it('maps each option to its parameter', () => {
    const p = printParams(
      pdf({
        pdf_paper_format: 'a4',
        pdf_landscape: true,
        pdf_margin: '1in',
        pdf_margin_left: '2in',
        pdf_scale: 0.5,
        pdf_print_background: false,
        pdf_page_ranges: '1 - 2, 4',
        pdf_footer_template: '<b class="pageNumber"></b>',
      }),
      sheet,
    );
    expect(p).to.deep.equal({
      paperWidth: 8.27,
      paperHeight: 11.7,
      landscape: true,
      marginTop: 1,
      marginRight: 1,
      marginBottom: 1,
      marginLeft: 2,
      scale: 0.5,
      printBackground: false,
      pageRanges: '1-2,4',
      displayHeaderFooter: true,
      headerTemplate: '<span></span>',
      footerTemplate: '<b class="pageNumber"></b>',
    });
    const sized = printParams(pdf({ pdf_paper_width: '100mm', pdf_paper_height: '150mm' }), sheet);
    expect(sized.paperWidth).to.be.closeTo(100 / 25.4, 1e-9);
    expect(sized.paperHeight).to.be.closeTo(150 / 25.4, 1e-9);
    expect(printsOnPaper(pdf({ pdf_paper_format: 'letter' }))).to.equal(true);
    expect(printsOnPaper(pdf({ pdf_paper_width: '4in', pdf_paper_height: '6in' }))).to.equal(true);
  });

  it('refuses PDF options on a capture in another format, naming them, and lets a PDF through', () => {
    expect(() => refuseStrayPdfOptions({ url: 'https://example.test/', image_format: 'png', pdf_landscape: true })).to.throw(
      'pdf_landscape: shapes a PDF only; send image_format=pdf',
    );
    expect(() => refuseStrayPdfOptions({ url: 'https://example.test/', pdf_scale: 0.5 })).to.throw('pdf_scale: shapes a PDF only');
    expect(() => refuseStrayPdfOptions(pdf({ pdf_scale: 0.5 }))).not.to.throw();
    expect(() => refuseStrayPdfOptions({ url: 'https://example.test/', image_format: 'png' })).not.to.throw();
  });
});
