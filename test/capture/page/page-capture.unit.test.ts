/**
 * page-capture.ts's reading of the browser's failures (hiccupOf): which CDP errors are the
 * browser's transient failure, taken again once on a fresh context and then answered 502
 * browser_failed (api.md, "The browser's own failures"), rather than a 500 that throws the
 * browser away. The rest of a page's capture is tested through the running system
 * (test/capture/snap.test.ts, real-web.test.ts, page/full-page.test.ts).
 */
import { expect } from 'chai';
import { CdpError } from '../../../services/capture/page/cdp';
import { hiccupOf } from '../../../services/capture/page/page-capture';

describe('page capture: which failures are the browser hiccuping', () => {
  it('a screenshot or PDF the browser could not take is a hiccup: its internal error, and a document replaced under it (a page reloading itself without end)', () => {
    for (const message of ['Internal error', 'Unable to capture screenshot', 'Not attached to an active page']) {
      expect(hiccupOf(new CdpError('Page.captureScreenshot', message))?.kind, message).to.equal('screenshot_failed');
      expect(hiccupOf(new CdpError('Page.printToPDF', message))?.kind, message).to.equal('screenshot_failed');
    }
  });

  it('the same words from another command, or another failure of the screenshot, are not', () => {
    expect(hiccupOf(new CdpError('Runtime.evaluate', 'Not attached to an active page'))).to.equal(null);
    expect(hiccupOf(new CdpError('Page.captureScreenshot', 'Invalid parameters'))).to.equal(null);
    expect(hiccupOf(new Error('Page.captureScreenshot: Not attached to an active page'))).to.equal(null);
  });
});
