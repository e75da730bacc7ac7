/**
 * What the page's request guard costs (issue 46). With the egress gateway on and nothing for
 * the page to decide (no blocking, no /snap_html document), a default deployment's guard
 * pauses nothing: it follows the main frame's documents and names what the gateway refused
 * (request-guard.ts: followDocuments). Before, it paused each document request of the page
 * (CDP's Fetch domain enabled on the page) and checked it with the egress policy before it went
 * out, as it still does with blocking; this bench measures both against no guard at all.
 *
 * One Grid session, the page server in a process of its own. For /simple and /heavy, ROUNDS
 * rounds of three captures, one each way (none, the shipped guard, documents paused), in an
 * order rotated every round so that drift falls on each alike: each in a fresh context and
 * window prepared beforehand, then navigate, load event, screenshot, the context disposed,
 * and 150 ms for the browser to finish with it. Measured per capture: the browser's CPU
 * (ChromeDriver's tree from /proc: browser, GPU, renderer), this process's CPU (the CDP
 * client, and the guard's handler and policy checks), and the time from the first command to
 * the screenshot's answer.
 *
 * Environment: BENCH_GUARD_ROUNDS (default 80). A run with it set prints its report but
 * leaves docs/benchmark.md alone.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { GatewayCapture } from '../services/capture/page/gateway';
import { PageSession } from '../services/capture/page/page-session';
import { guardRequests } from '../services/capture/page/request-guard';
import { EgressPolicy } from '../services/shared/egress';
import { type FloorTab, STEP_TIMEOUT_MS, oneBrowserOnGrid, openPage } from './floor';
import { FORMAT, QUALITY, VIEWPORT, envPositiveInt, publishResults, runBench } from './run';
import { addedCpuPerCapture, percentile } from './stats';

const ROUNDS = envPositiveInt('BENCH_GUARD_ROUNDS', 80);
const FULL_RUN = !process.env.BENCH_GUARD_ROUNDS?.trim();
/** Time after a capture's context is disposed for the browser to finish with it (its CPU counts to the capture). */
const SETTLE_MS = 150;

const progress = (msg: string) => process.stderr.write(`[guard] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** No guard; the guard as shipped (with the gateway: nothing paused); the page's documents paused and checked. */
type Way = 'none' | 'shipped' | 'paused';
const WAYS: readonly Way[] = ['none', 'shipped', 'paused'];
const WAY_NAMES: Record<Way, string> = {
  none: 'none',
  shipped: 'as shipped (follows the documents; the gateway refuses)',
  paused: 'documents paused and checked (Fetch on the page; before)',
};

interface Sample {
  browserMs: number;
  processMs: number;
  wallMs: number;
}

/** A page in a fresh context and window (openPage, as the floors open theirs), as the guard takes it: a PageSession. */
async function preparePage(tab: FloorTab): Promise<{ page: PageSession; contextId: string }> {
  const { cdp } = tab.slot;
  const { contextId, targetId, sessionId } = await openPage(tab.slot);
  const { frameTree } = await cdp.send<{ frameTree: { frame: { id: string } } }>('Page.getFrameTree', {}, sessionId);
  return { page: new PageSession(cdp, sessionId, contextId, targetId, frameTree.frame.id), contextId };
}

runBench('guard', async (cleanups) => {
  progress('starting the Selenium Grid and the page server');
  const { tab, pages, browserCpuMs: browserCpu } = await oneBrowserOnGrid(cleanups);
  const processCpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  // As a default deployment has it: private networks refused, the page server's loopback let
  // through (EGRESS_ALLOW_ADDRESSES), the gateway on (so the shipped guard pauses nothing).
  const policy = new EgressPolicy(false, undefined, undefined, ['127.0.0.0/8']);
  const gateway = new GatewayCapture(null, new http.Agent());

  /** Documents paused and checked, as the guard did with the gateway before (and still does with blocking): Fetch on the page. */
  const pauseDocuments = async (page: PageSession): Promise<() => void> => {
    const off = page.cdp.on('Fetch.requestPaused', (params, sessionId) => {
      if (sessionId !== page.sessionId) return;
      const { requestId, request } = params as { requestId: string; request: { url: string } };
      void policy
        .check(request.url)
        .then((verdict) =>
          page
            .send(verdict.allowed ? 'Fetch.continueRequest' : 'Fetch.failRequest', verdict.allowed ? { requestId } : { requestId, errorReason: 'AccessDenied' })
            .catch(() => undefined),
        );
    });
    await page.send('Fetch.enable', { patterns: [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Request' }] });
    return off;
  };

  const capture = async (url: string, way: Way): Promise<Sample> => {
    const { page, contextId } = await preparePage(tab);
    await sleep(SETTLE_MS);
    const b0 = browserCpu();
    const p0 = processCpu();
    const w0 = performance.now();
    let stop: () => void = () => undefined;
    if (way === 'shipped') {
      const guard = await guardRequests(page, policy, null, gateway);
      guard.beforeNavigation();
      stop = guard.stop;
    } else if (way === 'paused') {
      stop = await pauseDocuments(page);
    }
    const loaded = page.cdp.waitFor('Page.loadEventFired', page.sessionId, STEP_TIMEOUT_MS);
    loaded.catch(() => undefined);
    const nav = await page.send<{ errorText?: string }>('Page.navigate', { url });
    if (nav.errorText) throw new Error(`navigating to ${url} failed: ${nav.errorText}`);
    await loaded;
    await page.sendForData('Page.captureScreenshot', { format: FORMAT, quality: QUALITY });
    const wallMs = performance.now() - w0;
    stop();
    await page.cdp.send('Target.disposeBrowserContext', { browserContextId: contextId });
    await sleep(SETTLE_MS);
    // This process's CPU read first: reading /proc for the browser's is not the capture's.
    const processMs = processCpu() - p0;
    return { browserMs: browserCpu() - b0, processMs, wallMs };
  };

  const rows: string[] = [];
  const t0 = performance.now();
  for (const name of ['simple', 'heavy'] as const) {
    const url = `${pages.origin}${pages.pages[name]}`;
    for (const way of WAYS) await capture(url, way);
    const samples: Record<Way, Sample[]> = { none: [], shipped: [], paused: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < WAYS.length; i++) {
        const way = WAYS[(r + i) % WAYS.length]!;
        samples[way].push(await capture(url, way));
      }
    }
    const blocks = (way: Way, key: keyof Sample) => samples[way].map((s) => ({ captures: 1, ms: s.wallMs, machineCpuMs: s[key] }));
    const mean = (way: Way, key: keyof Sample) => samples[way].reduce((n, s) => n + s[key], 0) / samples[way].length;
    const median = (way: Way) =>
      percentile(
        samples[way].map((s) => s.wallMs).sort((a, b) => a - b),
        0.5,
      );
    const added = (way: Way, key: keyof Sample, digits: number) => {
      const a = addedCpuPerCapture(blocks('none', key), blocks(way, key));
      return `${a.added.toFixed(digits)} [${a.low.toFixed(digits)}–${a.high.toFixed(digits)}]`;
    };
    progress(`${name}: browser ${WAYS.map((w) => `${w} ${mean(w, 'browserMs').toFixed(1)}`).join(', ')} ms per capture`);
    for (const way of WAYS) {
      rows.push(
        `| /${name} | ${WAY_NAMES[way]} | ${mean(way, 'browserMs').toFixed(1)} | ${way === 'none' ? '–' : added(way, 'browserMs', 1)} | ` +
          `${mean(way, 'processMs').toFixed(2)} | ${way === 'none' ? '–' : added(way, 'processMs', 2)} | ${median(way).toFixed(1)} |`,
      );
    }
  }
  const report = [
    "## The page's request guard: what it costs per capture",
    '',
    `${ROUNDS} rounds per page of three captures, one each way, in an order rotated every round; each in a fresh context and window ` +
      `prepared beforehand, in one Grid session's browser (viewport ${VIEWPORT.width}x${VIEWPORT.height}, ${FORMAT} quality ${QUALITY}). ` +
      'The policy as a default deployment has it (private networks refused; the page server let through by EGRESS_ALLOW_ADDRESSES), the ' +
      "gateway on. Browser CPU: ChromeDriver's process tree from /proc, from the first command until " +
      `${SETTLE_MS} ms after the context was disposed; process CPU: this process (the CDP client, the guard's handler and policy checks); ` +
      `wall: the first command to the screenshot's answer, p50. Added: against no guard, with a 95% bootstrap interval over the rounds. ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s.`,
    '',
    '| page | guard | browser CPU ms | added | process CPU ms | added | wall ms p50 |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
  publishResults('guard', report, FULL_RUN, progress);
});
