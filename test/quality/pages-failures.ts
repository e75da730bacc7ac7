/**
 * Pages that fail, or never finish, as real ones do: dialogs while loading, popups, a page that
 * asks before being left, a renderer that runs out of memory, one that uses a lot without
 * running out, a body that never ends, a server that never answers, redirects in a loop (HTTP
 * and script), and content revealed only after the load event. Each has a clear answer in
 * well under the capture's budget: the picture of the page where there is one, or the error
 * code that names what happened (docs/api.md, "Real pages").
 */
import { COLOURS, type QualityPage, type Rgb, box, css, doc, expectError } from './page';
import { expectColour, expectFilled, expectInk } from './picture';

const BRAND: Rgb = COLOURS.teal;
/** A page's usual content: a header bar and a heading, for a check that the page itself is in the picture. */
const content = (colour: Rgb = BRAND) =>
  box(colour, 0, 0, 800, 80) + '<h1 style="position:absolute;left:40px;top:120px;margin:0;font:36px sans-serif">Welcome to the shop</h1>';

/** The page itself is in the picture: its header bar and its heading. */
async function expectContent(a: Parameters<QualityPage['check']>[0], colour: Rgb = BRAND): Promise<void> {
  const p = await a.picture();
  expectFilled(p, { x: 10, y: 10, w: 780, h: 60 }, colour, 'the page’s header bar');
  expectInk(p, { x: 40, y: 115, w: 500, h: 50 }, 'the page’s heading');
}

/** The answer came in time (ms), not after the capture's budget. */
function expectWithin(a: Parameters<QualityPage['check']>[0], ms: number, what: string): void {
  if (a.ms > ms) throw new Error(`${what} took ${a.ms} ms, expected under ${ms} ms`);
}

export const FAILURE_PAGES: QualityPage[] = [
  {
    name: 'alert-while-loading',
    mimics: 'an old site or a broken script that calls alert() while the page loads ("Please enable cookies", a debug alert left in)',
    routes: { '/': { body: doc(`<script>alert('Welcome!');</script>${content()}`) } },
    params: {},
    async check(a) {
      await expectContent(a);
      expectWithin(a, 2_000, 'a page with an alert');
    },
  },
  {
    name: 'confirm-and-prompt',
    mimics: 'an age gate or a "leave this site?" check written with confirm() and prompt() in the page’s script',
    routes: {
      '/': {
        body: doc(
          `${content()}<script>const adult = confirm('Are you over 18?'); const name = prompt('Your name?', 'guest'); ` +
            `document.body.insertAdjacentHTML('beforeend', '<div style="position:absolute;left:40px;top:300px;width:300px;height:60px;background:' + ` +
            `(adult === false && name === null ? '${css(COLOURS.green)}' : '${css(COLOURS.red)}') + '"></div>');</script>`,
        ),
      },
    },
    params: {},
    async check(a) {
      await expectContent(a);
      // Dismissed, both: the page carries on with false and null, and draws green.
      expectColour(await a.picture(), 190, 330, COLOURS.green, 'what the page drew after confirm (false) and prompt (null)');
    },
  },
  {
    name: 'dialog-in-frame',
    mimics: 'an embedded widget or ad from another site that calls alert() in its frame',
    routes: {
      '/': ({ origins }) => ({
        body: doc(
          `${content()}<iframe src="${origins.other}/dialog-in-frame/ad" width="300" height="150" style="position:absolute;left:40px;top:250px"></iframe>`,
        ),
      }),
    },
    otherRoutes: { '/ad': { body: doc(`<script>alert('You won!');</script>${box(COLOURS.orange, 0, 0, 300, 150)}`) } },
    params: {},
    async check(a) {
      await expectContent(a);
      expectColour(await a.picture(), 190, 325, COLOURS.orange, 'the frame’s content after its alert');
    },
  },
  {
    name: 'beforeunload-on-leave',
    mimics: 'a form or an editor that asks "Leave site? Changes you made may not be saved" (beforeunload), left by a redirect step',
    routes: {
      '/': {
        body: doc(
          `${content(COLOURS.red)}<input id="q" style="position:absolute;left:40px;top:300px">` +
            "<script>addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = ''; });</script>",
        ),
      },
      '/next': { body: doc(content()) },
    },
    params: {
      multi_step_actions: (_o, folder) =>
        JSON.stringify([
          { type: 'text_field', selector: '#q', value: 'unsaved' },
          { type: 'redirect', value: `${folder}next` },
        ]),
    },
    async check(a) {
      await expectContent(a);
    },
  },
  {
    name: 'popup-on-load',
    mimics: 'a pop-under ad or a "subscribe" window opened with window.open when the page loads',
    routes: {
      '/': { body: doc(`${content()}<script>window.open('popup', '_blank'); window.open('popup', 'promo', 'width=400,height=300');</script>`) },
      '/popup': { body: doc(box(COLOURS.red, 0, 0, 2000, 2000)) },
    },
    params: {},
    async check(a) {
      await expectContent(a);
    },
  },
  {
    name: 'renderer-out-of-memory',
    mimics: 'a page whose script allocates without end (a runaway loop, a leaking single-page app) until its renderer is killed for memory',
    // The script allocates 240 MB a task and yields between tasks, as a leak does (a script that
    // never yields is page_unresponsive first on a slow machine: script-never-ends), while an
    // image that never answers holds the load event, so the capture is still waiting for it
    // when the renderer dies. Filling the renderer's heap (capped at 1 GB for the corpus:
    // corpus.ts) takes a few seconds on a quiet machine and over 10 s on a loaded one, more than
    // the default navigation bound, which is raised so the crash is what ends it.
    routes: {
      '/': ({ origins }) => ({
        body: doc(
          `${content()}<img src="${origins.other}/renderer-out-of-memory/pixel.gif" width="1" height="1">` +
            '<script>const a = []; const grow = () => { for (let i = 0; i < 3; i++) a.push(new Array(1e7).fill(1.5)); setTimeout(grow, 0); }; grow();</script>',
        ),
      }),
    },
    otherRoutes: { '/pixel.gif': { never: 'silent', body: '' } },
    params: { navigation_timeout: 25_000 },
    check(a) {
      expectError(a, 422, 'page_crashed');
      // Before the raised navigation bound (25 s) ran out: the crash answered, not a bound.
      // The heap fills in the page's own time, near the navigation bound on a loaded machine.
      expectWithin(a, 29_000, 'a renderer that ran out of memory');
    },
  },
  {
    name: 'memory-pressure',
    mimics: 'a heavy web app that holds a few hundred megabytes (maps, editors, dashboards) and still draws',
    routes: {
      '/': {
        body: doc(`<script>window.__keep = []; for (let i = 0; i < 40; i++) window.__keep.push(new Array(1e6).fill(i + 0.5));</script>${content()}`),
      },
    },
    params: {},
    async check(a) {
      await expectContent(a);
    },
  },
  {
    name: 'never-ending-body',
    mimics: 'a page whose HTML keeps streaming (a live blog, a long poll, a server that never closes the response) while its content is on screen',
    routes: { '/': { never: 'open', body: doc(content()).replace('</body></html>', '') } },
    params: { navigation_timeout: 2_000 },
    async check(a) {
      await expectContent(a);
      expectWithin(a, 4_500, 'a body that never ends, with navigation_timeout=2000');
    },
  },
  {
    name: 'load-held-by-script',
    mimics: 'a third-party script or image that never answers and so holds the load event (a tag manager, a tracking pixel)',
    routes: {
      '/': ({ origins }) => ({ body: doc(`${content()}<img src="${origins.other}/load-held-by-script/pixel.gif" width="1" height="1">`) }),
    },
    otherRoutes: { '/pixel.gif': { never: 'silent', body: '' } },
    params: { navigation_timeout: 2_000, json: true },
    check(a) {
      if (a.status !== 200 || a.body?.load_finished !== false)
        throw new Error(`answered ${a.status} ${JSON.stringify(a.body)}, expected 200 with load_finished false`);
      expectWithin(a, 4_500, 'a page whose load event never comes, with navigation_timeout=2000');
    },
  },
  {
    name: 'server-never-answers',
    mimics: 'a server that accepts the connection and never answers (an overloaded origin, a stuck proxy)',
    routes: { '/': { never: 'silent', body: '' } },
    params: { navigation_timeout: 2_000 },
    check(a) {
      expectError(a, 422, 'page_load_failed');
      if (!String(a.body?.note).includes('sent no answer within 2 s')) throw new Error(`the note does not name the silent server: ${a.body?.note}`);
      expectWithin(a, 4_000, 'a server that never answers, with navigation_timeout=2000');
    },
  },
  ...(
    [
      ['url-is-a-pdf', 'a link straight to a PDF (a report, an invoice, a menu)', { 'content-type': 'application/pdf' }, '%PDF-1.4\n%%EOF\n', 200],
      [
        'url-is-an-attachment',
        'a download link (an export, a price list) answered with Content-Disposition: attachment',
        { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="prices.csv"' },
        'a,b\n1,2\n',
        200,
      ],
      ['url-answers-204', 'a tracking or beacon address that answers 204 No Content', {}, '', 204],
    ] as const
  ).map(
    ([name, mimics, headers, body, status]): QualityPage => ({
      name,
      mimics,
      routes: { '/': { status, headers: { ...headers }, body } },
      params: {},
      check(a) {
        expectError(a, 422, 'page_load_failed');
        const note = String(a.body?.note);
        if (!note.includes('no page to show') || note.includes('reachable'))
          throw new Error(`the note does not say the address answered with no page: ${note}`);
      },
    }),
  ),
  {
    name: 'redirect-loop-http',
    mimics: 'a misconfigured site whose HTTP redirects go round in a loop (http to https and back, a cookie check)',
    routes: { '/': { status: 302, headers: { location: './' }, body: '' } },
    params: {},
    check(a) {
      expectError(a, 422, 'page_load_failed');
      if (!/ERR_TOO_MANY_REDIRECTS/.test(String(a.body?.note))) throw new Error(`the note does not name the redirect loop: ${a.body?.note}`);
    },
  },
  {
    name: 'redirect-loop-script',
    mimics: 'two pages whose scripts send the browser to each other for good (a broken login or geo redirect)',
    routes: {
      '/': { body: doc("<script>location.replace('other');</script>") },
      '/other': { body: doc("<script>location.replace('./');</script>") },
    },
    params: { navigation_timeout: 2_000 },
    check(a) {
      expectError(a, 422, 'page_load_failed');
      if (!/navigated itself \d+ times/.test(String(a.body?.note))) throw new Error(`the note does not say the page kept navigating: ${a.body?.note}`);
      expectWithin(a, 4_000, 'a page that keeps redirecting itself, with navigation_timeout=2000');
    },
  },
  {
    name: 'refresh-loop',
    mimics: 'a page that reloads itself for good once loaded (a meta refresh of 0 s left on a maintenance or "please wait" page)',
    routes: { '/': { body: doc(content(), { head: '<meta http-equiv="refresh" content="0">' }) } },
    // Without a wait, the first document can be taken before its refresh: a right picture too.
    // A wait of 1 s was passed by a busy machine's slower reloads (fewer than 20 in it): 5 s
    // leaves the page time for 20 at 4 a second, and the answer comes at the 20th, not the wait's end.
    params: { wait: 5_000 },
    check(a) {
      expectError(a, 422, 'page_load_failed');
      if (!/navigated itself \d+ times/.test(String(a.body?.note))) throw new Error(`the note does not say the page kept navigating: ${a.body?.note}`);
      // Not at the end of the capture's budget (40 s here), holding the browser meanwhile.
      expectWithin(a, 10_000, 'a page that reloads itself without end');
    },
  },
  {
    name: 'refresh-every-second',
    mimics: 'a page that refreshes itself every second (a dashboard, a queue status, a live score page), captured after a wait of 3 s',
    routes: { '/': { body: doc(content(), { head: '<meta http-equiv="refresh" content="1">' }) } },
    params: { wait: 3_000 },
    async check(a) {
      await expectContent(a);
    },
  },
  {
    name: 'script-never-ends',
    mimics: 'a script that never ends once the page has loaded (a broken polling loop, a crypto miner), freezing the tab',
    // The loop starts once the page has loaded and drawn; the capture's wait ends after it has.
    routes: { '/': { body: doc(`${content()}<script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 200));</script>`) } },
    params: { wait: 1_000 },
    check(a) {
      expectError(a, 422, 'page_unresponsive');
      // Not at the end of the capture's budget (40 s here): 30 s without an answer, probed from the capture's 3rd second.
      expectWithin(a, 38_000, 'a page whose script never ends');
    },
  },
  {
    name: 'script-busy-in-bursts',
    mimics: 'a heavy web app whose script works in long tasks (1.5 s each) for 12 s and yields between them, captured after a wait of 10 s',
    routes: {
      '/': {
        body: doc(
          `${content()}<script>const end = Date.now() + 12000; const burst = () => { const t = Date.now() + 1500; while (Date.now() < t) {} ` +
            "if (Date.now() < end) setTimeout(burst, 20); }; addEventListener('load', () => setTimeout(burst, 20));</script>",
        ),
      },
    },
    params: { wait: 10_000 },
    async check(a) {
      await expectContent(a);
    },
  },
  {
    name: 'revealed-after-load',
    mimics: 'a page kept invisible until its script is ready (an anti-flicker snippet of an A/B testing tool: body opacity 0 until the next frame)',
    routes: {
      '/': {
        body: doc(
          `<style>body{opacity:0}</style>${content()}` +
            "<script>addEventListener('load', () => requestAnimationFrame(() => setTimeout(() => { document.body.style.opacity = 1; }, 30)));</script>",
        ),
      },
    },
    params: {},
    async check(a) {
      await expectContent(a);
    },
  },
];
