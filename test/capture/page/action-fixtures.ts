/**
 * Fixture pages for multi_step_actions, served locally: a login form whose server checks
 * the posted credentials, a shop page whose size dropdown changes the price, a terms
 * checkbox, a hover menu, tabs that switch only on trusted clicks, a link to a slow page,
 * a search form, and pages with late or timed content. Every request is recorded with its
 * method and body so tests can see what the browser really sent.
 */
import type http from 'node:http';
import { type LocalServer, type PageAnswer, servePages } from '../../support/local-server';

export interface SeenAction {
  method: string;
  path: string;
  query: string;
  body: string;
}

export interface ActionFixtures extends LocalServer {
  seen: SeenAction[];
}

export const LOGIN = { username: 'alice', password: 's3cret' };
export const PRICES: Record<string, string> = { s: '€89.00', m: '€94.00', l: '€99.00' };

const page = (title: string, body: string, head = '') =>
  `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${title}</title><style>html,body{margin:0;padding:0;font:16px/1.4 ` +
  `sans-serif}</style>${head}</head><body>${body}</body></html>`;

const LOGIN_FORM = page(
  'Sign in',
  `<main><h1>Sign in</h1>
  <form id="login" method="post" action="/login">
    <label for="username">Username</label> <input id="username" name="username" autocomplete="username" value="guest" required>
    <label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required>
    <button type="submit">Sign in</button>
  </form></main>`,
);

const SHOP = page(
  'Trail Runner',
  `<main><h1>Trail Runner</h1>
  <label for="size">Size</label>
  <select id="size" name="size">
    <option value="s">Small</option><option value="m">Medium</option><option value="l">Large</option><option value="xxl" disabled>XXL (sold out)</option>
  </select>
  <p>Price: <span id="price">${PRICES.s}</span></p></main>
  <script>const prices = ${JSON.stringify(PRICES)};
  document.getElementById('size').addEventListener('change', (e) => { document.getElementById('price').textContent = prices[e.target.value]; });</script>`,
);

const TERMS = page(
  'Terms',
  `<main><h1>Terms of service</h1><p>Please read and accept.</p>
  <label><input type="checkbox" id="agree"> I accept the terms</label>
  <button id="continue" disabled>Continue</button><p id="status">Not accepted yet</p></main>
  <script>document.getElementById('agree').addEventListener('change', (e) => {
    document.getElementById('continue').disabled = !e.target.checked;
    document.getElementById('status').textContent = e.target.checked ? 'Thanks for accepting' : 'Not accepted yet';
  });</script>`,
);

/** A menu shown by CSS :hover only: a real mouse must be over #products. */
const MENU = page(
  'Menu',
  `<nav><ul style="list-style:none;margin:0;padding:0;display:flex">
    <li id="products" style="position:relative;width:200px;height:40px;background:rgb(0,0,128);color:#fff">Products
      <ul class="submenu" style="position:absolute;top:40px;left:0;margin:0;padding:0;
        width:200px;height:120px;background:rgb(255,0,0)"><li>Shoes</li><li>Jackets</li></ul>
    </li></ul></nav>`,
  '<style>.submenu{display:none} #products:hover .submenu{display:block}</style>',
);

/** Tabs that switch only on trusted clicks (element.click() would not do). */
const TABS = page(
  'Product details',
  `<div role="tablist"><button id="tab-details" role="tab">Details</button><button id="tab-reviews" role="tab">Reviews</button></div>
  <section id="details" class="panel active">Waterproof, 280 g.</section><section id="reviews" class="panel">4.8 of 5 from 213 reviews</section>
  <script>for (const b of document.querySelectorAll('[role=tab]')) b.addEventListener('click', (e) => {
    if (!e.isTrusted) return;
    for (const p of document.querySelectorAll('.panel')) p.classList.toggle('active', p.id === b.id.slice(4));
  });</script>`,
  '<style>.panel{display:none}.panel.active{display:block}</style>',
);

const SEARCH = page('Search', `<form action="/results" method="get"><input name="q" value="trail shoes"><button>Search</button></form>`);

const PAGES: Record<string, (req: http.IncomingMessage, body: string, port: number) => PageAnswer> = {
  '/login': (req, body) => {
    if (req.method !== 'POST') return { body: LOGIN_FORM };
    const form = new URLSearchParams(body);
    if (form.get('username') === LOGIN.username && form.get('password') === LOGIN.password) {
      return { status: 303, headers: { location: '/account', 'set-cookie': `session=${LOGIN.username}-token; Path=/; HttpOnly` }, body: '' };
    }
    return { status: 401, body: page('Sign in', '<p id="error">Wrong username or password.</p>') };
  },
  '/account': (req) => {
    const session = /(?:^|;\s*)session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (session !== `${LOGIN.username}-token`) return { status: 302, headers: { location: '/login' }, body: '' };
    return { body: page('Your account', `<h1 id="welcome">Welcome back, ${LOGIN.username}</h1><p>You have 2 orders.</p>`) };
  },
  '/shop': () => ({ body: SHOP }),
  '/terms': () => ({ body: TERMS }),
  '/menu': () => ({ body: MENU }),
  '/tabs': () => ({ body: TABS }),
  '/links': () => ({ body: page('Links', '<p><a id="next" href="/slow-second">Next page</a></p><p><a id="home" href="/second">Home</a></p>') }),
  // Slow to answer, and slower still to finish loading (its image takes longer).
  '/slow-second': () => ({ delayMs: 400, body: page('Second page', '<h1 id="title">Second page (slow)</h1><img id="logo" src="/slow-logo.svg" alt="">') }),
  '/slow-logo.svg': () => ({
    delayMs: 900,
    headers: { 'content-type': 'image/svg+xml' },
    body: '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" fill="#08f"/></svg>',
  }),
  '/second': () => ({ body: page('Second page', '<h1 id="title">Second page</h1>') }),
  '/box': () => ({ body: page('Box', '<div id="box" style="width:200px;height:200px;background:#fff"></div>') }),
  '/late': () => ({
    body: page(
      'Late',
      '<p>loading…</p><script>setTimeout(() => document.body.insertAdjacentHTML("beforeend", "<p id=\\"late\\">late content</p>"), 1000)</script>',
    ),
  }),
  '/timer': () => ({ body: page('Timer', '<p>timer</p><script>setTimeout(() => { document.body.dataset.timer = "fired"; }, 300)</script>') }),
  '/search': () => ({ body: SEARCH }),
  '/results': (req) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams.get('q') ?? '';
    return { body: page('Results', `<h1 id="results">Results for ${q.replace(/[<&"]/g, '')}</h1>`) };
  },
  '/private-link': (_req, _body, port) => ({ body: page('Links', `<p><a id="inside" href="http://127.0.0.1:${port}/second">Intranet</a></p>`) }),
};

export async function startActionFixtures(): Promise<ActionFixtures> {
  const seen: SeenAction[] = [];
  const server = await servePages(({ req, method, path, query, body }, port) => {
    seen.push({ method, path, query, body });
    return PAGES[path]?.(req, body, port);
  });
  return { ...server, seen };
}
