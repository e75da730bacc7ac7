/**
 * The screenshot record in its three forms, as schemas with their types and the functions that
 * build them from a stored capture (ScreenshotRef): the snap record (/snap with json=true), the
 * full record of the account-wide list, and the short one of a configuration's list and a
 * finished job. The capture service owns screenshots; the api answers with these, and
 * /openapi.json and the MCP tools' output schemas show the same schemas.
 */
import { type Static, Type } from '@sinclair/typebox';
import { LISTED_AI_SCHEMA, NOT_ANALYSED } from '../../ai/public/ai-record';
import { STORED_TO_SCHEMA } from '../../proxy/public/storage-destination-record';
import type { ScreenshotRef } from '../../shared/contracts';

/** What metadata=true saves of a page (services/capture/page/page-text.ts): its metadata_url's JSON, and json=true's `metadata`. */
export const PAGE_METADATA_SCHEMA = Type.Object(
  {
    url: Type.String({ description: 'The address the page ended on.' }),
    title: Type.Union([Type.String(), Type.Null()]),
    description: Type.Union([Type.String(), Type.Null()], { description: 'The description meta tag.' }),
    language: Type.Union([Type.String(), Type.Null()], { description: '<html lang>, else the Content-Language meta tag.' }),
    canonical_url: Type.Union([Type.String(), Type.Null()], { description: 'link rel=canonical, absolute.' }),
    open_graph: Type.Record(Type.String(), Type.String(), {
      description: 'The og:* meta tags, by name without og: (title, description, image, type, url...).',
    }),
    twitter: Type.Record(Type.String(), Type.String(), { description: 'The twitter:* meta tags, by name without twitter: (card, site, title, image...).' }),
    icons: Type.Array(Type.Object({ rel: Type.String(), href: Type.String(), sizes: Type.Optional(Type.String()), type: Type.Optional(Type.String()) }), {
      description: 'link rel=icon, apple-touch-icon and mask-icon, hrefs absolute.',
    }),
    status_code: Type.Union([Type.Integer(), Type.Null()], { description: "The main document's final HTTP status." }),
    response_headers: Type.Record(Type.String(), Type.String(), { description: "The main document's response headers, names in lower case." }),
    redirects: Type.Array(Type.Object({ url: Type.String(), status: Type.Integer(), location: Type.String() }), {
      description: 'The redirects that led to the main document, in order: each address, its status and where it sent the browser.',
    }),
    fonts: Type.Array(Type.Object({ family: Type.String(), style: Type.String(), weight: Type.String() }), {
      description: "The web fonts the page loaded (document.fonts faces loaded: the browser loads a face only when the page's text uses it).",
    }),
  },
  { description: 'The metadata of the page, read from the same page load as the image (metadata=true). Beyond the spec.' },
);

const LINKS = {
  id: Type.String(),
  embed_url: Type.String({ description: "The configuration's public link to its latest image." }),
  screenshot_configuration_id: Type.String(),
  direct_link: Type.String({ description: 'The file, public (its name is random).' }),
  direct_thumbnail_link: Type.String(),
  taken_at_timestamp: Type.String({ description: 'Epoch milliseconds, as text.' }),
  taken_at: Type.String({ description: 'ISO 8601 with +00:00.' }),
  job_id: Type.String(),
  load_finished: Type.Optional(
    Type.Boolean({ description: 'Whether the page reached its wait_until moment (false: captured as drawn at navigation_timeout). Beyond the spec.' }),
  ),
  status_code: Type.Union([Type.Integer(), Type.Null()], {
    description: "The HTTP status of the page's main document, after redirects; null when not known (captures recorded before it was kept). Beyond the spec.",
  }),
  final_url: Type.Union([Type.String(), Type.Null()], {
    description: 'The address the page ended on, after redirects; null when not known (captures recorded before it was kept). Beyond the spec.',
  }),
  markdown_url: Type.Optional(
    Type.String({ description: "markdown=true: the page's main content as Markdown (public, text/markdown; its name is random). Beyond the spec." }),
  ),
  metadata_url: Type.Optional(
    Type.String({ description: "metadata=true: the page's metadata as JSON (public; its name is random), as `metadata` shows it. Beyond the spec." }),
  ),
  overlays: Type.Optional(
    Type.Array(
      Type.Object({
        element: Type.String({ description: 'The element, as tag#id.class.' }),
        reason: Type.Union([Type.Literal('hide_selectors'), Type.Literal('remove_selectors'), Type.Literal('chat'), Type.Literal('overlay')]),
        selector: Type.Optional(Type.String({ description: 'The selector that matched it (hide_selectors, remove_selectors, chat).' })),
      }),
      {
        description:
          'What hide_selectors, remove_selectors, block_chats and block_overlays hid or removed, and why (at most 50); present when one of them was asked for. Beyond the spec.',
      },
    ),
  ),
  stored_to: Type.Optional(STORED_TO_SCHEMA),
};

/** How the capture went out, when not directly: an own proxy (custom_proxy) or a real location (proxy_server). */
const EGRESS = {
  is_proxy_screenshot: Type.Boolean({ description: 'It went through a real location.' }),
  proxy_server: Type.Union([Type.String(), Type.Null()], { description: 'The real location it went through, or null.' }),
  custom_proxy: Type.Optional(Type.String({ description: 'The own proxy it went through (host:port).' })),
};

/** The snap record: the spec's fields (plus success), `ai` when an analysis was asked for, the proxy fields when one was used. */
export const SNAP_RECORD_SCHEMA = Type.Object({
  success: Type.Boolean(),
  ...LINKS,
  ai: Type.Optional(LISTED_AI_SCHEMA),
  metadata: Type.Optional(PAGE_METADATA_SCHEMA),
  is_proxy_screenshot: Type.Optional(EGRESS.is_proxy_screenshot),
  proxy_server: Type.Optional(EGRESS.proxy_server),
  custom_proxy: EGRESS.custom_proxy,
});
export type SnapRecord = Static<typeof SNAP_RECORD_SCHEMA>;

/** A snap with html_only=true: the rendered HTML. */
export const SNAP_HTML_SCHEMA = Type.Object({ success: Type.Boolean(), html: Type.String() });

/** The JSON answers of a snap: the record, or the HTML (html_only=true). */
export const SNAP_ANSWER_SCHEMA = Type.Union([SNAP_RECORD_SCHEMA, SNAP_HTML_SCHEMA]);

/** The account-wide list's record: the snap record's fields and the ones only this list carries. */
export const FULL_RECORD_SCHEMA = Type.Object({
  ...LINKS,
  is_browser_extension_screenshot: Type.Boolean(),
  ai: LISTED_AI_SCHEMA,
  ...EGRESS,
});
export type FullRecord = Static<typeof FULL_RECORD_SCHEMA>;

/** A configuration's list and a finished job: the four (L) fields, taken_at_timestamp in unix seconds. */
export const LISTED_RECORD_SCHEMA = Type.Object({
  direct_link: Type.String(),
  direct_thumbnail_link: Type.String(),
  taken_at_timestamp: Type.Integer({ description: 'Unix seconds.' }),
  job_id: Type.String(),
});
export type ListedRecord = Static<typeof LISTED_RECORD_SCHEMA>;

/** GET /jobs/:job_id before it failed (a failed job answers its error, with status and job_id). */
export const JOB_ANSWER_SCHEMA = Type.Object({
  success: Type.Boolean(),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('completed')]),
  job_id: Type.String(),
  screenshot: Type.Optional({ ...LISTED_RECORD_SCHEMA, description: 'Once completed.' }),
});

function egressFields(ref: ScreenshotRef): Pick<SnapRecord, 'custom_proxy' | 'is_proxy_screenshot' | 'proxy_server'> {
  if (ref.custom_proxy !== null) return { custom_proxy: ref.custom_proxy, is_proxy_screenshot: false, proxy_server: null };
  if (ref.proxy_server !== null) return { is_proxy_screenshot: true, proxy_server: ref.proxy_server };
  return {};
}

/** The snap record of a capture; `withAi`: an analysis was asked for. */
export function snapRecord(ref: ScreenshotRef, withAi: boolean): SnapRecord {
  return {
    success: true,
    id: ref.id,
    embed_url: ref.embed_url,
    screenshot_configuration_id: ref.config_id,
    direct_link: ref.direct_link,
    direct_thumbnail_link: ref.direct_thumbnail_link,
    taken_at_timestamp: String(ref.taken_at_ms),
    taken_at: new Date(ref.taken_at_ms).toISOString().replace('Z', '+00:00'),
    job_id: ref.job_id,
    // Beyond the spec's fields (docs/api.md): whether the page finished loading or was taken as drawn at navigation_timeout.
    ...(ref.load_finished !== null ? { load_finished: ref.load_finished } : {}),
    status_code: ref.status_code,
    final_url: ref.final_url,
    ...(ref.overlays ? { overlays: ref.overlays } : {}),
    ...(ref.stored_to ? { stored_to: ref.stored_to } : {}),
    ...(ref.markdown_link ? { markdown_url: ref.markdown_link } : {}),
    ...(ref.metadata_link ? { metadata_url: ref.metadata_link } : {}),
    ...(withAi ? { ai: ref.ai ?? NOT_ANALYSED } : {}),
    ...egressFields(ref),
  };
}

/** The account-wide list's record of a capture. */
export function fullRecord(ref: ScreenshotRef): FullRecord {
  const { success: _, ...record } = snapRecord(ref, false);
  return {
    ...record,
    is_browser_extension_screenshot: false,
    ai: ref.ai ?? NOT_ANALYSED,
    is_proxy_screenshot: ref.proxy_server !== null,
    proxy_server: ref.proxy_server,
    ...(ref.custom_proxy !== null ? { custom_proxy: ref.custom_proxy } : {}),
  };
}

/** A configuration's list and a finished job's record of a capture. */
export function listedRecord(ref: ScreenshotRef): ListedRecord {
  return {
    direct_link: ref.direct_link,
    direct_thumbnail_link: ref.direct_thumbnail_link,
    taken_at_timestamp: Math.floor(ref.taken_at_ms / 1000),
    job_id: ref.job_id,
  };
}
