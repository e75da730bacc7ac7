/**
 * Where the egress policy and page blocking meet: the one place that decides, request by
 * request, what a captured page may load. Every request the page makes (its navigations,
 * their redirects, frames and sub-resources) is paused at the Fetch stage; blocking
 * (no_ads, no_tracking, disable_third_party_js) answers first, then the egress policy.
 * The URLs the capture loads itself (the page's, a redirect step's) are checked here too,
 * before they are loaded, and every refusal is answered in the same words.
 */
import { serviceError } from '../shared/errors';
import type { BlockOptions, PageBlocker } from './blocking';
import type { EgressPolicy } from './egress';
import type { PageSession } from './page-session';

export interface RequestGuard {
  /** The first main-document load the egress policy refused (`<url> <reason>`), if any. */
  refusedNavigation(): string | null;
  /** Stops deciding (the page's context, where requests were paused, is disposed by the caller). */
  stop(): void;
}

/** Blocking as the capture asked for it: the blocker and the options (with the page's URL). */
export interface Blocking {
  blocker: PageBlocker;
  o: BlockOptions & { url: string };
}

/** url_not_allowed, with the note every refusal of the egress policy ends with. */
export function urlNotAllowed(what: string): Error {
  return serviceError('url_not_allowed', `${what}. Private and internal addresses are refused.`);
}

/** Refuses (url_not_allowed) a URL the capture is about to load itself, unless the policy allows it. */
export async function admitUrl(policy: EgressPolicy, url: string, prefix = ''): Promise<void> {
  const verdict = await policy.check(url);
  if (!verdict.allowed) throw urlNotAllowed(`${prefix}${url} ${verdict.reason}`);
}

const UNGUARDED: RequestGuard = { refusedNavigation: () => null, stop: () => undefined };

/**
 * Installs the guard before the page's first request. With nothing to decide (private
 * networks allowed and no blocking) requests are not paused at all: that costs each of
 * them a round trip. Remembers a refused main-document load so the caller can answer
 * url_not_allowed rather than page_load_failed.
 */
export async function guardRequests(page: PageSession, policy: EgressPolicy, blocking: Blocking | null): Promise<RequestGuard> {
  if (policy.allowPrivateNetworks && !blocking) return UNGUARDED;
  let refused: string | null = null;
  // The main frame's URL tells first from third parties.
  let pageUrl = blocking?.o.url ?? '';
  const off = page.cdp.on('Fetch.requestPaused', (params, sessionId) => {
    if (sessionId !== page.sessionId) return;
    const { requestId, request, resourceType, frameId } = params as { requestId: string; request: { url: string }; resourceType: string; frameId?: string };
    const isMainFrame = resourceType === 'Document' && frameId === page.mainFrameId;
    if (blocking) {
      if (isMainFrame) pageUrl = request.url;
      if (blocking.blocker.decide({ url: request.url, pageUrl, resourceType, isMainFrame }, blocking.o).block) {
        void page.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' }).catch(() => undefined);
        return;
      }
      if (policy.allowPrivateNetworks) {
        void page.send('Fetch.continueRequest', { requestId }).catch(() => undefined);
        return;
      }
    }
    void policy.check(request.url).then(
      (verdict) => {
        if (verdict.allowed) return page.send('Fetch.continueRequest', { requestId }).catch(() => undefined);
        // The page itself (or a redirect of it) refused: the capture is answered url_not_allowed.
        // A frame of the page is only left empty, like any other refused sub-request.
        if (isMainFrame && refused === null) refused = `${request.url} ${verdict.reason}`;
        return page.send('Fetch.failRequest', { requestId, errorReason: 'AccessDenied' }).catch(() => undefined);
      },
      () => page.send('Fetch.failRequest', { requestId, errorReason: 'AccessDenied' }).catch(() => undefined),
    );
  });
  await page.send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }] });
  return { refusedNavigation: () => refused, stop: off };
}
