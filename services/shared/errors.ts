/**
 * The catalogue of domain errors: each has the spec's error_code and its HTTP status.
 *
 * Errors are raised as MoleculerClientError/MoleculerError with `type` = error_code and
 * `code` = HTTP status, because Moleculer rebuilds only its own error classes when an error
 * crosses the transporter: a custom subclass would arrive as a plain object. The api maps
 * by `type` and `code` (see toEnvelope), so the mapping is the same in one process and across
 * many.
 */
import { Errors } from 'moleculer';

export const ERROR_STATUS = {
  // authentication
  access_token_required: 401,
  access_token_invalid: 401,
  /** A signed link (GET /render) whose signature is missing or does not verify: tampered, another secret, an unknown account. */
  invalid_signature: 403,
  /** A signed link that verifies, but whose `expires` has passed. */
  link_expired: 410,
  // input
  invalid_parameter: 400,
  not_found: 404,
  /** A stored secret (a proxy's password, a destination's credentials, a signing secret) sealed under another SECRETS_KEY: store it again. */
  secret_unreadable: 412,
  /** A PATCH whose configuration another request changed while it was checked (the api tries again first). */
  configuration_changed: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  // the request itself, refused before any route runs (services/api/protocol-errors.ts)
  malformed_request: 400,
  method_not_allowed: 405,
  request_timeout: 408,
  headers_too_large: 431,
  url_not_allowed: 400,
  // quotas and rates
  screenshot_limit_reached: 402,
  ai_credits_exhausted: 402,
  real_location_bandwidth_exhausted: 402,
  /** The month's domain research credits (one per domain) do not cover the domains asked for. */
  domain_research_limit_reached: 402,
  rate_limited: 429,
  /** The account already runs and has waiting as many captures as its plan allows (max_concurrent, max_queued). */
  concurrency_limit_reached: 429,
  // plan and addon gates (spec, Errors table)
  byok_plan_required: 402,
  byok_addon_required: 402,
  byo_proxy_plan_required: 402,
  byo_proxy_addon_required: 402,
  // own providers and proxies (spec, Errors table)
  ai_provider_not_configured: 412,
  ai_provider_unsupported: 400,
  ai_model_required: 400,
  ai_model_not_supported: 400,
  ai_provider_key_rejected: 401,
  ai_provider_unavailable: 503,
  /** The provider answered but would not do it: billing on the provider account, a request it refuses, an unusable answer. */
  ai_provider_error: 502,
  invalid_ai_structured_fields: 400,
  /** ai_provider=service on a server whose operator configured no SERVICE_AI_* backend (DESIGN section 3). */
  ai_service_not_configured: 503,
  custom_proxy_not_found: 412,
  invalid_proxy: 400,
  proxy_auth_failed: 400,
  proxy_connection_failed: 400,
  proxy_host_not_found: 400,
  proxy_timeout: 400,
  // accounts' storage destinations (store_to; docs/api.md, "Storage destinations")
  /** store_to names no destination of the account. */
  storage_destination_not_found: 400,
  /** A destination's fields are wrong, or its endpoint is a refused (private) address. */
  invalid_storage_destination: 400,
  /** The bucket refused the credentials (or their permissions). */
  storage_auth_failed: 400,
  /** The bucket does not exist. */
  storage_bucket_not_found: 400,
  /** The endpoint could not be reached, or did not answer in time. */
  storage_unreachable: 400,
  /** A capture's upload to its store_to destination failed (the capture is not recorded, nor charged). */
  storage_upload_failed: 502,
  // an image given to POST /ai/analyze (the note names urls[i] and why)
  /** Could not be fetched: unresolvable, refused connection, an HTTP error, too slow, too many redirects. */
  image_unreachable: 422,
  /** Larger than the per-image limit (bytes, or pixels once decoded). */
  image_too_large: 400,
  /** Its bytes are not a PNG, JPEG, WebP or GIF image (whatever its Content-Type said). */
  image_not_supported: 400,
  // capture
  page_load_failed: 422,
  /** The page's renderer crashed or was killed for memory (the browser itself is fine). */
  page_crashed: 422,
  /** The page's own script held its renderer (it answered no trivial script for 30 s, or half the capture's budget when longer): page-watch.ts. */
  page_unresponsive: 422,
  selector_not_found: 422,
  action_failed: 422,
  /** A fail-on rule of the capture matched (fail_on_status, fail_if_selector_*, fail_if_content_*): the note names the rule and what was seen. */
  capture_rule_failed: 422,
  capture_timeout: 504,
  /** The browser failed under the capture (not the page's fault) twice, or with too little time left to try again. */
  browser_failed: 502,
  capacity_exhausted: 503,
  /** GET /health before any capture node has a live browser (the note says what is missing). */
  not_ready: 503,
  /** The full stack was started without SECRETS_KEY, so no secret can be stored (shared/secrets.ts). */
  secrets_not_configured: 503,
  /** A store the request needs (Redis: usage counters, rate windows, account counts) cannot be reached now; with Retry-After (shared/redis.ts). */
  service_unavailable: 503,
  // an option of the spec this server does not carry out yet (refused, never ignored)
  feature_unavailable: 501,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorEnvelope {
  success: false;
  error_code: ErrorCode;
  note: string;
}

/** Extra data an error may carry to the HTTP layer. */
export interface ErrorData {
  /** Seconds, for 429 and 503 answers (Retry-After). */
  retryAfter?: number;
  [key: string]: unknown;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value);
}

/** Builds the error to throw from any service; `note` tells the caller what to do. */
export function serviceError(code: ErrorCode, note: string, data: ErrorData = {}): Errors.MoleculerError {
  const status = ERROR_STATUS[code];
  // 4xx are the caller's to fix (not retried by Moleculer); 5xx may be retryable.
  return status < 500 ? new Errors.MoleculerClientError(note, status, code, data) : new Errors.MoleculerError(note, status, code, data);
}

/**
 * A service that is not running anywhere, did not answer, or whose node (or the transporter)
 * just went away, or a store it needs that cannot be reached (service_unavailable): the
 * system is short of something for a while, not broken by the caller; a retry will find it.
 * The api answers 503 (capacity_exhausted for Moleculer's own errors); a queued job goes back
 * to the queue; a settlement of credit is asked again.
 */
export function isUnavailable(err: unknown): boolean {
  const type = (err as { type?: unknown } | null)?.type;
  return (
    typeof type === 'string' &&
    ['SERVICE_NOT_FOUND', 'SERVICE_NOT_AVAILABLE', 'REQUEST_TIMEOUT', 'REQUEST_SKIPPED', 'REQUEST_REJECTED', 'service_unavailable'].includes(type)
  );
}

/**
 * Reads any thrown value (ours, Moleculer's, a plain Error) into an envelope and status.
 * Unknown errors become 500 internal_error with a generic note: never a stack trace.
 */
export function toEnvelope(err: unknown): { status: number; body: ErrorEnvelope; retryAfter?: number } {
  const e = err as { type?: unknown; code?: unknown; message?: unknown; data?: ErrorData } | null;
  if (e && isErrorCode(e.type)) {
    const code = e.type;
    const retryAfter = typeof e.data?.retryAfter === 'number' ? e.data.retryAfter : undefined;
    return {
      status: ERROR_STATUS[code],
      body: { success: false, error_code: code, note: String(e.message ?? code) },
      ...(retryAfter !== undefined ? { retryAfter } : {}),
    };
  }
  if (isUnavailable(err)) {
    return {
      status: 503,
      body: {
        success: false,
        error_code: 'capacity_exhausted',
        note: 'A service needed for this request is not available right now; retry shortly.',
      },
      retryAfter: 5,
    };
  }
  return {
    status: 500,
    body: {
      success: false,
      error_code: 'internal_error',
      note: 'Something went wrong on our side; the error was logged. Retry, and report it if it persists.',
    },
  };
}

/**
 * What a failed capture records on its job row: a domain error keeps its code and note;
 * anything else is ours (`known: false`, for the caller to log) and shows a generic note.
 */
export function failureOf(err: unknown): { code: ErrorCode; note: string; known: boolean } {
  const e = err as { type?: unknown; message?: unknown } | null;
  if (e && isErrorCode(e.type)) return { code: e.type, note: String(e.message ?? e.type), known: true };
  return { code: 'internal_error', note: 'The capture failed on our side; it was logged.', known: false };
}
