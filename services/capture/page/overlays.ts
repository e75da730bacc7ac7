/**
 * What covers a page, cleared before the capture: hide_selectors (visibility: hidden),
 * remove_selectors (display: none), block_chats (the chat widgets' scripts are blocked by the
 * request guard, as no_ads blocks ads, and their containers hidden), block_overlays (what
 * covers the page — a newsletter or sign-up modal — found by its geometry and removed, and
 * the page's scrolling restored) and press_escape (one real Escape key press).
 *
 * The selectors are checked in the page before it loads (an invalid one is refused with
 * invalid_parameter, as wait_for's is); hiding and removing are a stylesheet, so what a
 * script adds later is hidden too. What was hidden or removed, and why, is returned for the
 * record (`overlays`).
 */
import { serviceError } from '../../shared/errors';
import type { BlockDecision, BlockOptions, BlockRequest } from './blocking';
import { type PageSession, inPageCall, quote, sleep } from './page-session';

export interface OverlayOptions {
  hide_selectors?: string[];
  remove_selectors?: string[];
  block_chats?: boolean;
  block_overlays?: boolean;
  press_escape?: boolean;
}

export type OverlayReason = 'hide_selectors' | 'remove_selectors' | 'chat' | 'overlay';

/** One thing the capture hid or removed, for the record. */
export interface OverlayEntry {
  /** The element, as tag#id.class (its first three classes). */
  element: string;
  reason: OverlayReason;
  /** The selector that matched it (hide_selectors, remove_selectors, chat). */
  selector?: string;
}

/** Most entries a record lists. */
export const MAX_OVERLAY_ENTRIES = 50;

/** Whether any overlay option was asked for (the record then carries `overlays`, empty or not). */
export function wantsOverlays(o: OverlayOptions): boolean {
  return Boolean(o.hide_selectors?.length || o.remove_selectors?.length || o.block_chats || o.block_overlays || o.press_escape);
}

/**
 * The hosts the common chat widgets load from (their loader scripts, frames and APIs); a host
 * and every host under it.
 */
export const CHAT_HOSTS = [
  // Intercom
  'widget.intercom.io',
  'js.intercomcdn.com',
  'api-iam.intercom.io',
  // Drift
  'js.driftt.com',
  'js.drift.com',
  // Crisp
  'client.crisp.chat',
  'client.relay.crisp.chat',
  // Zendesk (Web Widget, Messaging)
  'static.zdassets.com',
  'ekr.zdassets.com',
  'widget-mediator.zopim.com',
  // HubSpot conversations
  'js.usemessages.com',
  'js-na1.hs-scripts.com',
  'js.hs-scripts.com',
  // Tawk.to
  'embed.tawk.to',
  'va.tawk.to',
  // LiveChat
  'cdn.livechatinc.com',
  'secure.livechatinc.com',
  // Tidio
  'code.tidio.co',
  'widget-v4.tidiochat.com',
  // Olark
  'static.olark.com',
  // Freshchat, Gorgias, Front, Gist
  'wchat.freshchat.com',
  'config.gorgias.chat',
  'chat-assets.frontapp.com',
  'widget.gist.build',
];

/** The widgets' containers and launchers, by the ids and classes they draw. */
export const CHAT_SELECTORS = [
  // Intercom
  '#intercom-container',
  '#intercom-frame',
  '.intercom-lightweight-app',
  '.intercom-launcher',
  'iframe[name="intercom-launcher-frame"]',
  // Drift
  '#drift-widget',
  '#drift-frame-controller',
  '#drift-frame-chat',
  '.drift-frame-controller',
  '.drift-conductor-item',
  // Crisp
  '#crisp-chatbox',
  '.crisp-client',
  // Zendesk
  'iframe#launcher',
  'iframe#webWidget',
  'iframe[title="Button to launch messaging window"]',
  // HubSpot
  '#hubspot-messages-iframe-container',
  // Tawk.to
  '.tawk-min-container',
  'iframe[title="chat widget"]',
  // LiveChat
  '#chat-widget-container',
  '#livechat-compact-container',
  '#livechat-full',
  // Tidio
  '#tidio-chat',
  '#tidio-chat-iframe',
  // Olark
  '#olark-wrapper',
  '#olark-box-container',
  '.olark-launch-button',
  // Freshchat, Gorgias, Front, Gist
  '#fc_frame',
  '#gorgias-chat-container',
  '#front-chat-container',
  '#gist-app',
];

function chatHost(url: string): string | null {
  let host: string;
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'wss:' && u.protocol !== 'ws:') return null;
    host = u.hostname.toLowerCase();
  } catch {
    return null;
  }
  return CHAT_HOSTS.find((h) => host === h || host.endsWith(`.${h}`)) ?? null;
}

/** What decides on a page's requests (PageBlocker, or none). */
export interface RequestDecider {
  decide(req: BlockRequest, o: BlockOptions): BlockDecision;
}

/**
 * The request guard's decider with block_chats: the chat hosts' requests are discarded first,
 * then the lists' decisions (when no_ads, no_tracking or disable_third_party_js were asked too).
 */
export function withChatBlocking(decider: RequestDecider | null, o: OverlayOptions): RequestDecider | null {
  if (!o.block_chats) return decider;
  return {
    decide(req, opts) {
      const host = req.resourceType === 'Document' && req.isMainFrame ? null : chatHost(req.url);
      if (host) return { block: true, reason: `chat widget ${host}` };
      return decider ? decider.decide(req, opts) : { block: false };
    },
  };
}

/** In the page: the reason each selector is invalid (null for a valid one). */
function invalidSelectors(selectors: string[]): Array<string | null> {
  return selectors.map((s) => {
    try {
      document.createDocumentFragment().querySelector(s);
      return null;
    } catch (err) {
      return String((err as Error).message ?? err);
    }
  });
}

/** Refuses (invalid_parameter) a selector the browser cannot parse (selectors, hide_selectors, remove_selectors); run before navigating. */
export async function checkSelectors(page: PageSession, o: OverlayOptions & { selectors?: string }): Promise<void> {
  for (const name of ['selectors', 'hide_selectors', 'remove_selectors'] as const) {
    const given = o[name];
    const list = typeof given === 'string' ? [given] : given;
    if (!list?.length) continue;
    const reasons = await page.evaluate<Array<string | null>>(inPageCall(invalidSelectors, list), false);
    const bad = reasons.findIndex((r) => r !== null);
    if (bad >= 0) {
      throw serviceError(
        'invalid_parameter',
        `${name}: ${quote(list[bad] ?? '')} is not a valid CSS selector (${(reasons[bad] ?? '').split('\n')[0]}); give CSS selectors such as "#newsletter" or ".modal, .popup".`,
        { param: name },
      );
    }
  }
}

/** One real Escape key press (keyDown and keyUp), as a person closes a modal. */
export async function pressEscape(page: PageSession): Promise<void> {
  const key = { key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27, nativeVirtualKeyCode: 27 };
  await page.send('Input.dispatchKeyEvent', { type: 'keyDown', ...key });
  await page.send('Input.dispatchKeyEvent', { type: 'keyUp', ...key });
}

interface InPageRules {
  hide: string[];
  remove: string[];
  chats: string[];
  overlays: boolean;
  max: number;
}

/**
 * In the page: applies the rules and lists what they hid or removed. Hiding and removing are
 * one stylesheet (later elements match too). An overlay is a fixed or sticky layer (the
 * outermost fixed or sticky ancestor of something) under the viewport's centre that covers
 * over 30% of the viewport (open shadow roots included), has the page's content under it (not an application drawn in one
 * fixed frame), and either locks the page's scrolling (overflow hidden on html or body, or a
 * fixed body) or is a backdrop (90% of the viewport or more); it is removed with the layers
 * above it at the centre (a dialog drawn over its backdrop), round after round (a modal, then
 * its separate backdrop), at most 5 rounds.
 */
function clearInPage(rules: InPageRules): Array<{ element: string; reason: string; selector?: string }> {
  const out: Array<{ element: string; reason: string; selector?: string }> = [];
  const describe = (el: Element): string => {
    let d = el.tagName.toLowerCase();
    if (el.id) d += `#${el.id}`;
    const classes = Array.from(el.classList).slice(0, 3);
    if (classes.length) d += `.${classes.join('.')}`;
    return d.slice(0, 200);
  };
  const note = (el: Element, reason: string, selector?: string) => {
    if (out.length < rules.max) out.push({ element: describe(el), reason, ...(selector ? { selector } : {}) });
  };
  const css: string[] = [];
  const apply = (list: string[], reason: string, decl: string) => {
    for (const s of list) {
      let found: NodeListOf<Element>;
      try {
        found = document.querySelectorAll(s);
      } catch {
        continue;
      }
      css.push(`${s} { ${decl} }`);
      for (const el of Array.from(found)) note(el, reason, s);
    }
  };
  apply(rules.hide, 'hide_selectors', 'visibility: hidden !important;');
  apply(rules.remove, 'remove_selectors', 'display: none !important;');
  apply(rules.chats, 'chat', 'display: none !important; visibility: hidden !important;');
  if (css.length) {
    const style = document.createElement('style');
    style.setAttribute('data-injected', 'overlays');
    style.textContent = css.join('\n');
    (document.head || document.documentElement).appendChild(style);
  }
  if (!rules.overlays) return out;
  const root = document.documentElement;
  const body = document.body;
  const vw = window.innerWidth;
  const vh = window.innerHeight;
  const locked = () => {
    const hidden = (el: Element | null) => {
      if (!el) return false;
      const s = getComputedStyle(el);
      return s.overflowY === 'hidden' || s.overflowY === 'clip' || s.overflow === 'hidden';
    };
    return hidden(root) || hidden(body) || (body !== null && getComputedStyle(body).position === 'fixed');
  };
  const wasLocked = locked();
  let removed = 0;
  // Consent platforms (Usercentrics) and web-component modals draw their layers inside a
  // shadow root, under a host that is itself neither fixed nor sized: the hit test of the
  // document stops at the host, and parentElement stops at the root. Ancestry is therefore
  // the flat tree's (what is laid out inside what): a slotted element's slot, an element's
  // parent, a shadow root's host. Closed roots stay out of reach, as they do for scripts.
  const up = (el: Element): Element | null => {
    if (el.assignedSlot) return el.assignedSlot;
    if (el.parentElement) return el.parentElement;
    const parent = el.parentNode;
    return parent instanceof ShadowRoot ? parent.host : null;
  };
  const within = (outer: Element, el: Element): boolean => {
    for (let at: Element | null = el; at; at = up(at)) if (at === outer) return true;
    return false;
  };
  /**
   * What is at a point, top first, open shadow roots included: each host's own elements
   * under the point come just before it (the host is listed where its topmost one is).
   * Only the hosts at the point are asked, so a page costs one hit test per such root.
   */
  const stackAt = (x: number, y: number): Element[] => {
    const stack = document.elementsFromPoint(x, y);
    const opened = new Set<ShadowRoot>();
    for (let i = 0; i < stack.length; i++) {
      const shadow = stack[i]?.shadowRoot;
      if (!shadow || opened.has(shadow)) continue;
      opened.add(shadow);
      const inner = shadow.elementsFromPoint(x, y).filter((el) => el.getRootNode() === shadow);
      // Looked at next: a host among them opens in turn.
      stack.splice(i, 0, ...inner);
      i--;
    }
    return stack;
  };
  /** The outermost fixed or sticky ancestor of an element (itself included), below <body>. */
  const fixedRoot = (from: Element): HTMLElement | null => {
    let found: HTMLElement | null = null;
    for (let el: Element | null = from; el && el !== body && el !== root; el = up(el)) {
      const pos = getComputedStyle(el).position;
      if ((pos === 'fixed' || pos === 'sticky') && el instanceof HTMLElement) found = el;
    }
    return found;
  };
  const shareOf = (el: Element): number => {
    const r = el.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, vw) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, vh) - Math.max(r.top, 0));
    return (w * h) / (vw * vh);
  };
  for (let round = 0; round < 5; round++) {
    // What is at the viewport's centre, top first, and the fixed layers it belongs to.
    const stack = stackAt(vw / 2, vh / 2);
    const layers: HTMLElement[] = [];
    for (const el of stack) {
      const layer = fixedRoot(el);
      if (layer && !layers.includes(layer)) layers.push(layer);
    }
    // The first large layer with the page's own content under it somewhere (not an application drawn in one fixed frame).
    const covering = layers.find((layer) => {
      const share = shareOf(layer);
      if (share < 0.3 || (!wasLocked && share < 0.9)) return false;
      const r = layer.getBoundingClientRect();
      const left = Math.max(r.left, 0);
      const top = Math.max(r.top, 0);
      const w = Math.min(r.right, vw) - left;
      const h = Math.min(r.bottom, vh) - top;
      for (const fx of [1, 3, 5]) {
        for (const fy of [1, 3, 5]) {
          const under = stackAt(left + (w * fx) / 6, top + (h * fy) / 6);
          let last = -1;
          under.forEach((el, i) => {
            if (within(layer, el)) last = i;
          });
          if (last < 0) continue;
          const content = under.slice(last + 1).some((el) => el !== root && el !== body && !within(el, layer) && !fixedRoot(el));
          if (content) return true;
        }
      }
      return false;
    });
    if (!covering) break;
    // The layers on top of it at the centre go with it (a dialog drawn over its own backdrop).
    for (const layer of layers.slice(0, layers.indexOf(covering) + 1)) {
      layer.style.setProperty('display', 'none', 'important');
      note(layer, 'overlay');
      removed++;
    }
  }
  if (removed > 0 && wasLocked) {
    for (const el of [root, body]) {
      if (!el) continue;
      el.style.setProperty('overflow', 'visible', 'important');
    }
    if (body && getComputedStyle(body).position === 'fixed') {
      body.style.setProperty('position', 'static', 'important');
      body.style.setProperty('top', 'auto', 'important');
    }
  }
  return out;
}

/**
 * Clears the page as the options ask (press_escape first, then the selectors, the chat
 * widgets and the overlays); what was hidden or removed, and why.
 */
export async function clearOverlays(page: PageSession, o: OverlayOptions): Promise<OverlayEntry[]> {
  if (o.press_escape) {
    await pressEscape(page);
    // A modal's closing transition, and its script's next frame.
    await sleep(300);
  }
  const rules: InPageRules = {
    hide: o.hide_selectors ?? [],
    remove: o.remove_selectors ?? [],
    chats: o.block_chats ? CHAT_SELECTORS : [],
    overlays: Boolean(o.block_overlays),
    max: MAX_OVERLAY_ENTRIES,
  };
  if (!rules.hide.length && !rules.remove.length && !rules.chats.length && !rules.overlays) return [];
  return page.evaluate<OverlayEntry[]>(inPageCall(clearInPage, rules), false);
}
