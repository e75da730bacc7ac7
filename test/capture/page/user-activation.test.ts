/**
 * The capture's own looks at the page (waiting for wait_for's element, for the fonts and lazy
 * images, the scrolling of a full page, the blank-picture check) do not tell the page that its
 * visitor acted: a page that changes once it has been interacted with (a site's "allow
 * notifications?" prompt, a player that starts with sound, a chat that opens) is taken as a
 * visitor who has not touched it sees it. What the caller asks the page to do (js_inject, an
 * action's click) is the visitor's act, and the page sees it as one. On the real Grid.
 */
import { expect } from 'chai';
import { pixel, snapSuite } from '../../support/capture-helpers';
import { type LocalServer, servePages } from '../../support/local-server';

const WHITE: [number, number, number] = [255, 255, 255];
const RED: [number, number, number] = [220, 0, 0];

/**
 * Turns red in the first frame after the page has had user activation (the User Activation
 * API: navigator.userActivation.hasBeenActive), so the picture shows whether it was given; an
 * element appears after 300 ms, for wait_for to look for a few times first; a button under a
 * transparent layer, which a click reaches only as the DOM's click(); 2000 px tall.
 */
const SOFT_PROMPT =
  '<!doctype html><html><head><style>html,body{margin:0;background:rgb(255,255,255)}body.touched{background:rgb(220,0,0)}' +
  'main{height:2000px}button{position:absolute;top:500px;left:20px}#veil{position:absolute;top:490px;left:0;width:300px;height:60px;z-index:2}' +
  '</style></head><body><main><p id="late" hidden>here now</p><button id="later" type="button">Later</button><div id="veil"></div></main><script>' +
  "const look = () => { if (navigator.userActivation.hasBeenActive) document.body.classList.add('touched'); requestAnimationFrame(look); };" +
  "requestAnimationFrame(look); setTimeout(() => { document.getElementById('late').hidden = false; }, 300);" +
  '</script></body></html>';

describe('user activation: the capture looks without acting, the caller acts as the visitor (real Grid)', function () {
  this.timeout(60_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
  let site: LocalServer;
  before(async () => {
    site = await servePages(({ path }) => (path === '/prompt' ? { body: SOFT_PROMPT } : undefined));
  });
  after(() => site.stop());

  const base = () => ({ url: `${site.origin}/prompt`, image_format: 'png', page_width: 800, page_height: 600 });

  it('a viewport capture waiting for an element that comes late leaves the page untouched', async () => {
    const r = await t.snap({ ...base(), wait_for: '#late' });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await pixel(r.raw, 400, 20)).to.deep.equal(WHITE);
  });

  it('a full-page capture, scrolled through for its lazy content, leaves the page untouched', async () => {
    const r = await t.snap({ ...base(), fullpage: true });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await pixel(r.raw, 400, 20)).to.deep.equal(WHITE);
    expect(await pixel(r.raw, 400, 1900)).to.deep.equal(WHITE);
  });

  it("js_inject is the visitor's act: the page sees user activation", async () => {
    const r = await t.snap({ ...base(), js_inject: "document.title = 'asked'" });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await pixel(r.raw, 400, 20)).to.deep.equal(RED);
  });

  it("an action's click on a button the pointer cannot reach is the visitor's act: the page sees user activation", async () => {
    const r = await t.snap({ ...base(), multi_step_actions: JSON.stringify([{ type: 'click', selector: '#later' }]) });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await pixel(r.raw, 400, 20)).to.deep.equal(RED);
  });
});
