/**
 * The operator view (/console/operator) against the real system: signing in with
 * CONSOLE_OPERATOR_TOKEN, never with an account's key; an account's session refused there and
 * the operator's cookie never sent to an account's pages; a wrong token refused and counted
 * with the accounts' sign-ins per address; the plan change through billing.setPlan, refused
 * without its CSRF token or from another origin; the pages reading what the service has.
 */
import { expect } from 'chai';
import { issueOperatorSession, operatorSessionCsrf } from '../../../services/api/console/operator';
import { snapSuite } from '../../support/capture-helpers';
import { consoleSignIn } from '../../support/console';
import { cookieGet, cookiePost, operatorSignIn, pageToken } from '../../support/console-operator';
import { request } from '../../support/http';

const OPERATOR_TOKEN = 'op-test-token-0123456789abcdef';
const SIGNIN_MAX = 6;

describe('web console: the operator view', function () {
  this.timeout(120_000);
  const t = snapSuite(() => ({
    ALLOW_PRIVATE_NETWORKS: 'true',
    CAPTURE_SESSIONS: '1',
    CAPTURE_TIMEOUT_MS: '15000',
    CONSOLE_OPERATOR_TOKEN: OPERATOR_TOKEN,
    CONSOLE_SIGNIN_MAX: String(SIGNIN_MAX),
    CONSOLE_SIGNIN_WINDOW_SECONDS: '600',
  }));
  const base = () => t.sys.base;
  let customer = { account_id: '', access_token: '' };
  let operator = '';
  let address = 0;
  /** A client address of its own per sign-in, so the attempts of one test do not limit another's. */
  const fresh = () => ({ 'x-forwarded-for': `198.51.100.${++address}` });

  before(async () => {
    customer = await t.sys.account('free');
    // A capture that fails (the page answers 404, and fail_on_status names it): counted by its error code.
    const failed = await request<Record<string, unknown>>(base(), 'POST', '/snap', {
      headers: { authorization: `Bearer ${customer.access_token}` },
      json: { url: `${t.fx.origin}/no-such-page`, json: true, wait: 0, ttl: 0, fail_on_status: '404' },
    });
    expect(failed.status, JSON.stringify(failed.body)).to.be.within(400, 599);
  });

  it('signs in with the operator token: a cookie of its own for /console/operator, HttpOnly, and the accounts page', async () => {
    const r = await operatorSignIn(base(), OPERATOR_TOKEN, fresh());
    expect(r.status).to.equal(303);
    expect(r.location).to.equal('/console/operator');
    expect(r.setCookie).to.match(/^console_operator=[^;]+; Path=\/console\/operator; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(r.cookiesSet, "each cookie set once: the session, and the sign-in form's deleted").to.deep.equal(['console_operator', 'console_signin']);
    expect(r.session).not.to.contain(OPERATOR_TOKEN);
    operator = `console_operator=${r.session}`;
    const page = await cookieGet(base(), operator, '/console/operator');
    expect(page.status).to.equal(200);
    const text = await page.text();
    expect(text).to.contain('<h1>Accounts and plans</h1>');
    expect(text).to.contain(customer.account_id);
    expect(text).not.to.contain(OPERATOR_TOKEN);
  });

  it("refuses an account's key at the operator sign-in, and an account's session on every operator page (403)", async () => {
    const withKey = await operatorSignIn(base(), customer.access_token, fresh());
    expect(withKey.status).to.equal(401);
    expect(withKey.session).to.equal('');
    expect(withKey.body).to.contain('That operator token is not valid.');

    const signedIn = await consoleSignIn(base(), customer.access_token, fresh());
    expect(signedIn.status).to.equal(303);
    const session = `console_session=${signedIn.session}`;
    for (const path of ['/console/operator', '/console/operator/capacity', '/console/operator/locations']) {
      const r = await cookieGet(base(), session, path);
      expect(r.status, path).to.equal(403);
      expect(await r.text(), path).to.contain('Operators only');
    }
    const token = await pageToken(await cookieGet(base(), session, '/console'));
    const change = await cookiePost(base(), session, `/console/operator/accounts/${customer.account_id}/plan`, { _csrf: token, plan: 'big' });
    expect(change.status).to.equal(403);
    expect((await call('billing.listAccounts')).find((a) => a.account_id === customer.account_id)?.plan).to.equal('free');
    // Without any session: to the operator's sign-in.
    const none = await cookieGet(base(), '', '/console/operator/capacity');
    expect(none.status).to.equal(303);
    expect(none.headers.get('location')).to.equal('/console/operator/sign-in');
  });

  it("is never an account's session: the operator cookie opens no account page, and a forged or stale one is refused", async () => {
    const r = await cookieGet(base(), operator, '/console');
    expect(r.status).to.equal(303);
    expect(r.headers.get('location')).to.equal('/console/sign-in');
    const [expires, nonce] = operator.slice('console_operator='.length).split('.');
    for (const forged of [`${expires}.${nonce}.AAAA`, `${Number(expires) + 1000}.${nonce}.${operator.split('.')[2]}`, 'x']) {
      const page = await cookieGet(base(), `console_operator=${forged}`, '/console/operator');
      expect(page.status, forged).to.equal(303);
    }
    // Signed with another token (the token changed): refused.
    const other = issueOperatorSession('another-token-0123456789abcdef', Date.now(), 600);
    expect(operatorSessionCsrf(OPERATOR_TOKEN, other, Date.now())).to.equal(null);
    expect(operatorSessionCsrf(OPERATOR_TOKEN, issueOperatorSession(OPERATOR_TOKEN, Date.now() - 700_000, 600), Date.now())).to.equal(null);
  });

  it('refuses a wrong token (401) and limits attempts per address with the accounts sign-in (429 with Retry-After), the right token included', async () => {
    const from = fresh();
    const wrong = await operatorSignIn(base(), 'op-wrong-token-000000000000000', from);
    expect(wrong.status).to.equal(401);
    expect(wrong.session).to.equal('');
    expect(wrong.body).not.to.contain('op-wrong-token');
    // One account sign-in from the same address counts in the same window.
    expect((await consoleSignIn(base(), 'sk_guess', from)).status).to.equal(401);
    for (let i = 2; i < SIGNIN_MAX; i++) expect((await operatorSignIn(base(), `op-guess-${i}-000000000000000`, from)).status, `attempt ${i + 1}`).to.equal(401);
    const limited = await operatorSignIn(base(), OPERATOR_TOKEN, from);
    expect(limited.status).to.equal(429);
    expect(Number(limited.retryAfter)).to.be.within(1, 600);
    expect(limited.session).to.equal('');
    expect((await consoleSignIn(base(), customer.access_token, from)).status).to.equal(429);
    expect((await operatorSignIn(base(), OPERATOR_TOKEN, fresh())).status).to.equal(303);
  });

  it("changes an account's plan through billing.setPlan with the form's token, and refuses it without the token or from another origin", async () => {
    const path = `/console/operator/accounts/${customer.account_id}/plan`;
    const token = await pageToken(await cookieGet(base(), operator, '/console/operator'));
    expect(token).to.match(/^[\w-]{20,}$/);
    const missing = await cookiePost(base(), operator, path, { plan: 'big' });
    expect(missing.status).to.equal(403);
    expect(await missing.text()).to.contain('security token');
    const wrong = await cookiePost(base(), operator, path, { _csrf: `${token}x`, plan: 'big' });
    expect(wrong.status).to.equal(403);
    const elsewhere = await cookiePost(base(), operator, path, { _csrf: token, plan: 'big' }, { origin: 'https://evil.example' });
    expect(elsewhere.status).to.equal(403);
    expect((await call('billing.listAccounts')).find((a) => a.account_id === customer.account_id)?.plan).to.equal('free');

    const done = await cookiePost(base(), operator, path, { _csrf: token, plan: 'big' });
    expect(done.status).to.equal(200);
    expect(await done.text()).to.contain(`Account ${customer.account_id} is now on plan big.`);
    expect((await call('billing.listAccounts')).find((a) => a.account_id === customer.account_id)?.plan).to.equal('big');
    // The account's own usage page shows the new plan.
    const limits = await request<{ limits: { screenshots: number } }>(base(), 'GET', `/account_limits?access_token=${customer.access_token}`);
    expect(limits.status).to.equal(200);
    const unknown = await cookiePost(base(), operator, path, { _csrf: token, plan: 'no-such-plan' });
    expect(unknown.status).to.be.within(400, 499);
  });

  it('shows each capture instance, the failures by error code and the real locations, without waiting on what is not there', async () => {
    const started = Date.now();
    const capacity = await (await cookieGet(base(), operator, '/console/operator/capacity')).text();
    expect(capacity).to.contain('<h1>Capacity and failures</h1>');
    const nodeRow = /<tr><td><code>([^<]+)<\/code><\/td><td>(\d+)<\/td><td>(\d+)<\/td><td>(\d+) of 1<\/td>/.exec(capacity);
    expect(nodeRow, capacity).to.not.equal(null);
    expect(capacity).to.match(/<td><code>[a-z_]+<\/code><\/td><td>[1-9]\d*<\/td>/);
    // The tests' system captures on the shared Grid (SELENIUM_URL): its nodes and their sessions.
    const grid = capacity.slice(capacity.indexOf('<h2 id="grid-h">'));
    expect(grid, grid).to.match(/<tr><td><code>https?:\/\/[^<]+<\/code><\/td><td>UP<\/td><td>\d+ of [1-9]\d*<\/td><\/tr>/);
    // Fair sharing: the customer's capture started (its last start), against its plan's limits.
    const sharing = capacity.slice(capacity.indexOf('<h2 id="sharing-h">'), capacity.indexOf('<h2 id="failures-h">'));
    expect(sharing, sharing).to.match(new RegExp(`<tr><td><code>${customer.account_id}</code></td><td>big</td><td>0 of 5</td><td>0 of 16</td><td><time `));
    const locations = await (await cookieGet(base(), operator, '/console/operator/locations')).text();
    expect(locations).to.contain('<h1>Real locations</h1>');
    expect(Date.now() - started).to.be.below(10_000);
  });

  it('signs out with its token: the cookie is deleted', async () => {
    const r = await operatorSignIn(base(), OPERATOR_TOKEN, fresh());
    const cookie = `console_operator=${r.session}`;
    const token = await pageToken(await cookieGet(base(), cookie, '/console/operator'));
    const out = await cookiePost(base(), cookie, '/console/operator/sign-out', { _csrf: token });
    expect(out.status).to.equal(303);
    expect(out.headers.getSetCookie().find((c) => c.startsWith('console_operator='))).to.match(/^console_operator=; Path=\/console\/operator;.*Max-Age=0/);
  });

  async function call(action: 'billing.listAccounts') {
    return (await t.sys.broker.call(action, {})) as Array<{ account_id: string; plan: string }>;
  }
});
