/**
 * Where the egress policy and page blocking meet in the page. With the egress gateway
 * (gateway.ts) the policy itself is enforced at the network layer, for every request the
 * browser makes; interception in the page (CDP's Fetch) is used only for what the gateway
 * cannot do:
 * - blocking (no_ads, no_tracking, disable_third_party_js, block_chats), which needs the page's
 *   view of a request (its frame, its type, the page it belongs to): every request is paused
 *   then, and its documents are checked before they are requested;
 * - a /snap_html document, answered in the page (below).
 * Otherwise nothing is paused (followDocuments): a refused page or redirect of the main frame
 * is named in url_not_allowed from the gateway's refusals, and a refused frame is left empty
 * (the gateway's refusal of a plain-HTTP request draws nothing).
 * Without a gateway (EGRESS_GATEWAY=off) every request is checked here.
 * The URLs the capture loads itself (the page's, a redirect step's) are checked too,
 * before they are loaded, and every refusal is answered in the same words.
 * A /snap_html capture's document is answered here too: the request for its address
 * (INLINE_DOCUMENT_URL, a .localhost name the egress policy refuses) gets html_content, so the document loads as any
 * page does, and everything it asks for goes out through the gateway and this guard.
 */
import { serviceError } from '../../shared/errors';
import type { BlockOptions, PageBlocker } from './blocking';
import type { EgressPolicy } from '../../shared/egress';
import type { GatewayCapture } from './gateway';
import type { PageSession } from './page-session';

export interface RequestGuard {
  /**
   * The first main-document load the egress policy refused (`<url> <reason>`), if any: here,
   * or by the gateway (for `url` if given, else the last main-document URL seen). `failed`:
   * asked as a navigation of the main frame failed, which a refusal of its document (or of a
   * redirect of it) since the navigation was sent explains (beforeNavigation).
   */
  refusedNavigation(url?: string, failed?: boolean): string | null;
  /** Called just before the capture sends a navigation of the main frame. */
  beforeNavigation(): void;
  /** Stops deciding (the page's context, where requests were paused, is disposed by the caller). */
  stop(): void;
}

/** A document the capture gives the page itself (/snap_html), and the address it is given at. */
export interface InlineDocument {
  url: string;
  html: string;
}

/** Blocking as the capture asked for it: the blocker and the options (with the page's URL). */
export interface Blocking {
  /** The lists' blocker, or what decides for block_chats (overlays.ts). */
  blocker: Pick<PageBlocker, 'decide'>;
  o: BlockOptions & { url: string };
}

/** url_not_allowed, with the note every refusal of the egress policy ends with. */
export function urlNotAllowed(what: string): Error {
  return serviceError('url_not_allowed', `${what}. Private and internal addresses are refused.`);
}

/**
 * Refuses (url_not_allowed) a URL the capture is about to load itself, unless the policy
 * allows it. With the capture's egress gateway, its host is decided by the gateway's own
 * admission, which the page's requests to it then use (one DNS question per name and capture).
 */
export async function admitUrl(policy: EgressPolicy, url: string, prefix = '', gateway: GatewayCapture | null = null): Promise<void> {
  const verdict = await policy.check(url, gateway ? (host) => gateway.admit(host, policy) : undefined);
  if (!verdict.allowed) throw urlNotAllowed(`${prefix}${url} ${verdict.reason}`);
}

const UNGUARDED: RequestGuard = { refusedNavigation: () => null, beforeNavigation: () => undefined, stop: () => undefined };

/**
 * Installs the guard before the page's first request. With nothing to decide (private
 * networks allowed and no blocking) requests are not paused at all: that costs each of
 * them a round trip. Remembers a refused main-document load so the caller can answer
 * url_not_allowed rather than page_load_failed.
 */
export async function guardRequests(
  page: PageSession,
  policy: EgressPolicy,
  blocking: Blocking | null,
  gateway: GatewayCapture | null = null,
  inline: InlineDocument | null = null,
): Promise<RequestGuard> {
  if (policy.allowPrivateNetworks && !blocking && !inline) return UNGUARDED;
  if (gateway && !blocking && !inline) return followDocuments(page, gateway);
  let refused: string | null = null;
  // The main frame's URL tells first from third parties.
  let pageUrl = blocking?.o.url ?? '';
  let mainUrl = '';
  const refusedNavigation = (url?: string): string | null => {
    if (refused !== null || !gateway) return refused;
    return gateway.refusalOf(url ?? mainUrl) ?? (mainUrl ? gateway.refusalOf(mainUrl) : null);
  };
  const off = page.cdp.on('Fetch.requestPaused', (params, sessionId) => {
    if (sessionId !== page.sessionId) return;
    const { requestId, request, resourceType, frameId } = params as { requestId: string; request: { url: string }; resourceType: string; frameId?: string };
    const isMainFrame = resourceType === 'Document' && frameId === page.mainFrameId;
    if (isMainFrame && inline && request.url === inline.url) {
      const body = Buffer.from(inline.html, 'utf8').toString('base64');
      const responseHeaders = [{ name: 'Content-Type', value: 'text/html; charset=utf-8' }];
      void page.send('Fetch.fulfillRequest', { requestId, responseCode: 200, responseHeaders, body }).catch(() => undefined);
      return;
    }
    if (isMainFrame) mainUrl = request.url;
    if (blocking) {
      if (isMainFrame) pageUrl = request.url;
      if (blocking.blocker.decide({ url: request.url, pageUrl, resourceType, isMainFrame }, blocking.o).block) {
        void page.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' }).catch(() => undefined);
        return;
      }
    }
    if (policy.allowPrivateNetworks) {
      void page.send('Fetch.continueRequest', { requestId }).catch(() => undefined);
      return;
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
  // Without blocking, and with the gateway (or nothing to refuse), only documents are paused:
  // every other request costs a round trip here for nothing.
  const documentsOnly = !blocking && (gateway !== null || policy.allowPrivateNetworks);
  const patterns = documentsOnly ? [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Request' }] : [{ urlPattern: '*', requestStage: 'Request' }];
  await page.send('Fetch.enable', { patterns });
  return { refusedNavigation, beforeNavigation: () => undefined, stop: off };
}

/**
 * With the gateway and nothing for the page to decide, no request is paused: the gateway
 * refuses what the policy refuses, at the network layer, for every request. Pausing the page's
 * documents (CDP's Fetch domain on the page) cost the browser a few ms of CPU per capture and a
 * round trip before the navigation (docs/benchmark.md, the guard's results). What it earned
 * is kept: a refused page or redirect of the main frame is named in url_not_allowed from the
 * gateway's refusals, by the main frame's address as it commits (the gateway's blank refusal
 * page, for plain HTTP) or, for a navigation that failed without committing anything (a
 * refused tunnel: https), by what the gateway refused since it was sent.
 */
function followDocuments(page: PageSession, gateway: GatewayCapture): RequestGuard {
  let mainUrl = '';
  // The gateway's refusals before the last navigation was sent: none of them can have failed it.
  let before = 0;
  const off = page.cdp.on('Page.frameNavigated', (params, sessionId) => {
    if (sessionId !== page.sessionId) return;
    const { frame } = params as { frame: { id: string; url: string; unreachableUrl?: string } };
    if (frame.id === page.mainFrameId) mainUrl = frame.unreachableUrl || frame.url;
  });
  return {
    refusedNavigation(url?: string, failed = false) {
      const named = (url ? gateway.refusalOf(url) : null) ?? (mainUrl ? gateway.refusalOf(mainUrl) : null);
      if (named || !failed) return named;
      // A navigation that failed commits nothing (a refused tunnel: an https redirect), so no
      // address is seen in the page: the first refusal since it was sent is taken as its
      // document's. Until a new document commits, the only other requests are those of the
      // page it leaves: none in a capture's first navigation (about:blank).
      const refusal = gateway.refusals[before];
      return refusal ? `${refusal.url} ${refusal.reason}` : null;
    },
    beforeNavigation() {
      before = gateway.refusals.length;
    },
    stop: off,
  };
}
