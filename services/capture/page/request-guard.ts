/**
 * Where the egress policy and page blocking meet in the page. With the egress gateway
 * (gateway.ts) the policy itself is enforced at the network layer, for every request the
 * browser makes; what stays here is what interception in the page still earns:
 * - blocking (no_ads, no_tracking, disable_third_party_js), which needs the page's view of
 *   a request (its frame, its type, the page it belongs to): every request is paused then;
 * - the friendlier error: documents (the page, its redirects, its frames) are checked
 *   before they are requested, so a refused page answers url_not_allowed naming the
 *   address, and a refused frame is simply left empty.
 * Without a gateway (EGRESS_GATEWAY=off) every request is checked here, as before.
 * The URLs the capture loads itself (the page's, a redirect step's) are checked too,
 * before they are loaded, and every refusal is answered in the same words.
 * A /snap_html capture's document is answered here too: the request for its address
 * (INLINE_DOCUMENT_URL, which never resolves) gets html_content, so the document loads as any
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
   * or by the gateway (for `url` if given, else the last main-document URL seen).
   */
  refusedNavigation(url?: string): string | null;
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
export async function guardRequests(
  page: PageSession,
  policy: EgressPolicy,
  blocking: Blocking | null,
  gateway: GatewayCapture | null = null,
  inline: InlineDocument | null = null,
): Promise<RequestGuard> {
  if (policy.allowPrivateNetworks && !blocking && !inline) return UNGUARDED;
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
  return { refusedNavigation, stop: off };
}
