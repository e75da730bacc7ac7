/**
 * Tests are found from the code: `test/` mirrors `services/`, a module's own tests at the
 * same relative path (`services/capture/jobs/snaps.ts` → `test/capture/jobs/snaps.unit.test.ts`,
 * or `snaps.test.ts` when it needs a backend, or `snaps.<aspect>.test.ts`). A module without
 * such a file is listed below with where it is tested instead and why it has no file of its
 * own; a new module that has neither fails here, and so does an entry whose module is gone
 * or has a test file of its own by now.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '..', '..', '..');

const WIRING = 'wiring only (a ServiceUnit); every test of the service starts it through runSystem or a broker';
const SYSTEM = 'tested through the running system, as clients call it';

/** Modules without a test file of their own: where they are tested, and why not apart. */
const WITHOUT_OWN_TESTS: Readonly<Record<string, string>> = {
  // Service wiring.
  'ai/ai.service.ts': WIRING,
  'api/api.service.ts': WIRING,
  'billing/billing.service.ts': WIRING,
  'capture/capture.service.ts': WIRING,
  'notifier/notifier.service.ts': WIRING,
  'proxy/proxy.service.ts': WIRING,
  'scheduler/scheduler.service.ts': WIRING,
  'capture/capture-parts.ts': "the capture service's parts, built once at its start: every capture test runs them",
  'capture/collaborators.ts':
    "capture's calls to other services, one line each: the cross-service tests (test/system/, test/ai/capture-analysis, test/proxy/*-capture) go through every one",
  // Metrics registries: read through /metrics by the tests of what they count.
  'ai/metrics.ts': 'its counters are read from /metrics in test/ai/capture-analysis.test.ts',
  'api/metrics.ts': 'its counters are read from /metrics in test/api/client-compat.test.ts and test/api/mcp-server.test.ts',
  'billing/metrics.ts': 'its counters are read from /metrics in test/api/http.test.ts',
  'notifier/metrics.ts': 'its counters are read from /metrics in test/notifier/deliveries.test.ts',
  // The api's routes: tested over HTTP against a running system.
  'api/ai-routes.ts': `${SYSTEM}: test/ai/own-providers.test.ts, test/ai/models.test.ts`,
  'api/analysis-checks.ts': `${SYSTEM}: the AI checks before a capture, in test/ai/capture-analysis.test.ts and test/ai/analyze-images.test.ts`,
  'api/config-routes.ts': `${SYSTEM}: test/scheduler/configs.test.ts`,
  'api/image-analysis-routes.ts': `${SYSTEM}: test/ai/analyze-images.test.ts`,
  'api/oauth-routes.ts': `${SYSTEM}: the MCP clients' OAuth discovery in test/api/mcp-server.test.ts and test/api/client-compat.test.ts`,
  'api/proxy-routes.ts': `${SYSTEM}: test/proxy/own-proxies.test.ts, test/proxy/real-locations.test.ts`,
  'api/research-routes.ts': `${SYSTEM}: test/ai/domain-research.test.ts`,
  'api/routes.ts': `${SYSTEM}: the table of every route; test/api/http.test.ts and the OpenAPI checks read it`,
  'api/storage-routes.ts': `${SYSTEM}: test/proxy/storage-destinations.test.ts`,
  'api/snap-routes.ts': `${SYSTEM}: test/capture/snap.test.ts, test/capture/snap-html.test.ts`,
  'api/webhook-routes.ts': `${SYSTEM}: test/notifier/deliveries.test.ts`,
  // The web console's pages: rendered from the actions, driven in the real Chromium.
  'api/console/pages/capture.ts': `${SYSTEM}: one capture's page in the real Chromium, test/api/console/console.test.ts`,
  'api/console/pages/overview.ts': `${SYSTEM}: the overview's usage and chart in the real Chromium, test/api/console/console.test.ts`,
  'api/console/pages/sign-in.ts': `${SYSTEM}: signing in (right key, wrong key, rate limit, CSRF) in the real Chromium, test/api/console/console.test.ts`,
  'api/console/pages/context.ts': 'types only',
  'api/console/pages/builder.ts': `${SYSTEM}: a capture built, run in the background and its image shown; the API's note for a bad value, nothing charged; CSRF, in the real Chromium, test/api/console/console-pages.test.ts`,
  'api/console/pages/configs.ts': `${SYSTEM}: configurations created, listed with their schedule, edited, captured now, deleted; 404 for another account's, in the real Chromium, test/api/console/console-pages.test.ts`,
  'api/console/pages/changes.ts': `${SYSTEM}: change alerts with before/after, escaped, 404 for another account's configuration, in the real Chromium, test/api/console/console-account.test.ts`,
  'api/console/pages/webhooks.ts': `${SYSTEM}: deliveries with their attempts and Redeliver in the real Chromium, test/api/console/console-account.test.ts`,
  'api/console/pages/keys.ts': `${SYSTEM}: key and secret rotation, own proxies (no password shown), CSRF and 404 in the real Chromium, test/api/console/console-account.test.ts`,
  'api/console/assets.ts':
    'the style sheet and script the pages link, in test/api/console/layout.unit.test.ts; served under the CSP in test/api/console/console.test.ts',
  'api/paging-params.ts': 'the paging parameters, in test/api/http-params.unit.test.ts with the other declared params',
  'api/request-log.ts': "the request log's lines, in test/system/logs.test.ts",
  'api/mcp-images.ts': 'the images MCP tools hand an agent, in test/api/mcp-tools.unit.test.ts and test/api/mcp-server.test.ts',
  // The ai service's parts: behind its actions, tested with the providers on local stand-ins.
  'ai/image-analysis.ts': 'POST /ai/analyze behind its route, in test/ai/analyze-images.test.ts',
  'ai/image-fetch.ts': 'the fetch of an image URL under the egress policy, in test/ai/analyze-images.test.ts',
  'ai/model-cache.ts': 'the model lists, in test/ai/policy.unit.test.ts and test/ai/models.test.ts',
  'ai/provider-keys.ts': 'own keys sealed and verified, in test/ai/own-providers.test.ts and test/ai/policy.unit.test.ts',
  'ai/research-extraction.ts': "research's extraction, in test/ai/domain-research.test.ts",
  'ai/sample-image.ts': 'the image a key is verified with, in test/ai/own-providers.test.ts',
  'ai/public/ai-record.ts': "the analysis record, in test/ai/capture-analysis.test.ts and the worker's credits in test/capture/jobs/worker.unit.test.ts",
  'ai/providers/anthropic.ts': 'the provider clients over their real SDKs against local stand-ins: test/ai/providers.test.ts, test/ai/models.test.ts',
  'ai/providers/calls.ts': 'the provider clients over their real SDKs against local stand-ins: test/ai/providers.test.ts',
  'ai/providers/index.ts': 'the provider table: test/ai/providers.test.ts',
  'ai/providers/openai.ts': 'the provider clients over their real SDKs against local stand-ins: test/ai/providers.test.ts, test/ai/models.test.ts',
  'ai/providers/openrouter.ts': 'the provider clients over their real SDKs against local stand-ins: test/ai/providers.test.ts, test/ai/models.test.ts',
  'ai/providers/request.ts': 'the provider clients over their real SDKs against local stand-ins: test/ai/providers.test.ts',
  'ai/providers/structured.ts': 'structured answers, in test/ai/structured.unit.test.ts',
  'ai/providers/types.ts': 'types only',
  // Billing.
  'capture/public/snap-timing.ts':
    "a snap's budget and its credit's deadline: the deadline the api asks billing for, in test/billing/overdue-reservations.test.ts",
  'shared/rotating-secrets.ts':
    "through its two users: the link signing secret's rotations in test/billing/link-secrets.test.ts, the webhook secret's in test/notifier/deliveries.test.ts",
  'billing/public/credits.ts': 'test/billing/credits.unit.test.ts (named for what it does: credits reserved, committed, released)',
  'billing/public/plan-gates.ts': 'the plan and addon gates, 402, in test/ai/own-providers.test.ts and test/proxy/own-proxies.test.ts',
  // Capture.
  'capture/fairness/concurrency-admission.ts':
    "an account's 429s, in test/capture/fair-sharing.test.ts and with the real pool in test/capture/browsers/browser-pool.unit.test.ts",
  'capture/page/consent.ts': 'consent walls, in test/capture/page/blocking.test.ts, test/capture/real-web.test.ts and the quality corpus',
  'capture/page/cross-site-frames.ts': 'cross-site frames in full pages, in test/capture/real-web.test.ts and test/capture/snap.test.ts',
  'capture/page/page-reading.ts': "research's reading of a page, in test/ai/domain-research.test.ts",
  'capture/page/visual-regions.ts':
    'the region and masks of visual change steps, measured in the real Chromium: test/notifier/public/visual-alerts.test.ts (layout shift, masked carousel and clock)',
  'capture/page/page-session.ts':
    'the CDP session every page module shares, in test/capture/page/painting.unit.test.ts and test/capture/browsers/browser-slot.unit.test.ts',
  'capture/page/page-watch.ts':
    'dialogs, popups, crashes and lifecycle, in test/capture/real-web.test.ts; pages that never rest, in the quality corpus (test/quality/pages-failures.ts)',
  'capture/page/request-guard.ts': "a page's requests checked, in test/capture/isolation.test.ts and test/capture/egress-gateway.test.ts",
  'capture/public/thumbnail-names.ts': 'in test/capture/jobs/files.unit.test.ts',
  'capture/public/scheduled-waiting.ts': "a configuration's waiting scheduled job, read in the scheduler's claim: test/scheduler/schedule-runner.test.ts",
  // Notifier.
  'notifier/change-notifications.ts': 'the change notification lists, in test/notifier/change-alerts.test.ts',
  'notifier/public/visual-match-worker.ts':
    "the pool's thread entry, run by every comparison in test/notifier/public/visual-match.unit.test.ts and visual-diff.unit.test.ts",
  'notifier/dispatcher.ts': "the sender's loop, in test/notifier/deliveries.test.ts and test/notifier/notifier-cluster.test.ts",
  'notifier/http-post.ts': 'the POST to a receiver under the egress policy, in test/notifier/deliveries.test.ts',
  'notifier/signing-secrets.ts': 'signing secrets, in test/notifier/deliveries.test.ts and test/notifier/admin-cli.test.ts',
  'notifier/signing.ts': "Standard Webhooks signatures, checked with the standardwebhooks library's own verifier in test/notifier/deliveries.test.ts",
  'notifier/public/change-alerts.ts': 'change readings, in test/notifier/change-alerts.test.ts',
  'notifier/public/outbox.ts': 'the outbox, in test/notifier/deliveries.test.ts and test/notifier/capture-deliveries.test.ts',
  // Proxy.
  'proxy/places.ts': 'real location names, in test/proxy/presets.test.ts and test/proxy/real-locations.test.ts',
  'proxy/proxies.ts': 'own proxies, in test/proxy/own-proxies.test.ts',
  'proxy/proxy-check.ts': 'a proxy tested through proxy-chain, in test/proxy/own-proxies.test.ts and test/proxy/presets.test.ts',
  'proxy/proxy-repository.ts': 'the proxies table, in test/proxy/own-proxies.test.ts',
  'proxy/bucket-clients.ts': 'S3 (AWS SDK against s3rver) and GCS (its client against the GCS stand-in) uploads, in test/proxy/storage-destinations.test.ts',
  'proxy/destination-repository.ts': 'the storage_destinations table, in test/proxy/storage-destinations.test.ts and test/proxy/destinations.test.ts',
  'proxy/public/storage-destination-record.ts': 'the destination record and stored_to, checked against every answer in test/proxy/storage-destinations.test.ts',
  // The kernel.
  'shared/address-policy.ts': 'literal targets refused, in test/proxy/own-proxies.test.ts and test/ai/domain-research.test.ts',
  'shared/contracts.ts': 'types of actions and events, checked by the compiler (test/shared/define-service.unit.test.ts)',
  'shared/domain-research.ts': "research's shapes and limits, in test/api/research-csv.unit.test.ts and test/ai/domain-research.test.ts",
  'shared/egress.ts': 'the egress policy, in test/capture/page/gateway.test.ts and test/capture/isolation.test.ts',
  'shared/errors.ts': 'the error table and envelope, in test/api/protocol-errors.test.ts and every test that checks an envelope (test/support/errors.ts)',
  'shared/links.ts': 'links in records, in test/capture/jobs/screenshots.test.ts',
  'shared/metrics.ts': 'the metrics snapshot and merge, in test/api/operations.test.ts',
  'shared/paging.ts': 'cursor paging, in test/capture/jobs/screenshots.test.ts',
  'shared/screenshot-options.ts': 'the option table, in test/api/request-schemas.unit.test.ts and test/ai/structured-fields.unit.test.ts',
  'shared/service-unit.ts': 'types only',
};

/** Every .ts module under services/, relative to it. */
function modules(dir = ''): string[] {
  return fs.readdirSync(path.join(ROOT, 'services', dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return modules(rel);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The test files at a module's mirrored path: `<name>.test.ts`, `<name>.unit.test.ts` or `<name>.<aspect>.test.ts`. */
function ownTests(module: string, exists = (rel: string) => fs.existsSync(path.join(ROOT, 'test', rel))): string[] {
  const dir = path.posix.dirname(module);
  const name = path.posix.basename(module, '.ts');
  if (!exists(dir)) return [];
  return fs
    .readdirSync(path.join(ROOT, 'test', dir))
    .filter((f) => f.startsWith(`${name}.`) && f.endsWith('.test.ts'))
    .map((f) => path.posix.join(dir, f));
}

/** What is wrong with the list against the code: modules with neither a test file nor an entry, and stale entries. */
function problems(code: string[], hasOwn: (m: string) => boolean, list: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const m of code) {
    if (!hasOwn(m) && !(m in list))
      out.push(`services/${m} has no test/${m.replace(/\.ts$/, '.test.ts')} (or .unit.test.ts): write one, or list it here with why`);
  }
  for (const [m, why] of Object.entries(list)) {
    if (!code.includes(m)) out.push(`services/${m} is listed but no longer exists: take it off the list`);
    else if (hasOwn(m)) out.push(`services/${m} is listed but has a test file of its own now: take it off the list`);
    if (why.trim().length < 10) out.push(`services/${m}: say where it is tested and why not apart`);
  }
  return out;
}

describe('tests are found from the code (test/ mirrors services/)', () => {
  const code = modules();

  it('finds the modules and their test files', () => {
    expect(code.length).to.be.greaterThan(100);
    expect(ownTests('capture/jobs/snaps.ts')).to.deep.equal(['capture/jobs/snaps.unit.test.ts']);
    expect(ownTests('capture/browsers/grid-drain.ts').sort()).to.deep.equal([
      'capture/browsers/grid-drain.test.ts',
      'capture/browsers/grid-drain.unit.test.ts',
    ]);
  });

  it('every module has a test file at its mirrored path, or is listed with where it is tested instead', () => {
    expect(problems(code, (m) => ownTests(m).length > 0, WITHOUT_OWN_TESTS)).to.deep.equal([]);
  });

  it('refuses a new module with neither, an entry whose module is gone or tested apart, and an entry without a reason', () => {
    const list = { 'x/gone.ts': 'was tested in x', 'x/tested.ts': 'tested elsewhere, somewhere', 'x/terse.ts': 'no' };
    const found = problems(['x/new.ts', 'x/tested.ts', 'x/terse.ts'], (m) => m === 'x/tested.ts', list);
    expect(found).to.have.length(4);
    expect(found[0]).to.contain('services/x/new.ts has no test/x/new.test.ts');
    expect(found.join('\n'))
      .to.contain('x/gone.ts is listed but no longer exists')
      .and.contain('x/tested.ts is listed but has a test file')
      .and.contain('x/terse.ts: say where');
  });
});
