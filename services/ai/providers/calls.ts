/**
 * How every provider call is made and how it fails: one deadline for the whole call (retries
 * included), bounded retries of outages and rate limits, and the SDKs' errors turned into an
 * AiFailure whose note never holds the key.
 *
 * The SDKs retry by themselves (twice, with 10-minute timeouts, sleeping as long as a
 * Retry-After asks); that is turned off (maxRetries 0 per request) and done here instead, so a
 * 429 whose Retry-After does not fit the time left ends at once as ai_rate_limited rather
 * than as a timeout minutes later.
 */
import * as Anthropic from '@anthropic-ai/sdk';
import * as OpenAI from 'openai';
import { AiFailure, type AiFailureCode } from './types';

export interface CallPolicy {
  /** Names the provider in notes: 'Anthropic', 'OpenAI', 'OpenRouter', 'The AI backend'. */
  label: string;
  timeoutMs: number;
  maxRetries: number;
  /** Scrubbed from every note. */
  secret?: string;
}

/** Per-request options both SDKs take. */
export interface SdkRequestOptions {
  signal: AbortSignal;
  timeout: number;
  maxRetries: 0;
}

/** Anything that looks like a provider key (sk-..., sk-ant-..., sk-or-v1-...), and the key itself. */
export function redact(text: string, secret?: string): string {
  let out = secret && secret.length >= 4 ? text.split(secret).join('[key]') : text;
  out = out.replace(/\bsk-[A-Za-z0-9_-]{6,}/g, '[key]');
  return out.length > 300 ? `${out.slice(0, 297)}...` : out;
}

type Seen =
  | { kind: 'timeout' }
  | { kind: 'connection'; detail: string }
  | { kind: 'http'; status: number; detail: string; headers?: Headers }
  | { kind: 'unreadable'; detail: string };

function classify(err: unknown): Seen {
  // Our deadline is the only abort, so an abort is a timeout.
  if (err instanceof Anthropic.APIConnectionTimeoutError || err instanceof OpenAI.APIConnectionTimeoutError) return { kind: 'timeout' };
  if (err instanceof Anthropic.APIUserAbortError || err instanceof OpenAI.APIUserAbortError) return { kind: 'timeout' };
  if (err instanceof Anthropic.APIConnectionError || err instanceof OpenAI.APIConnectionError) {
    const cause = (err as Error & { cause?: { cause?: { code?: string }; code?: string; message?: string } }).cause;
    return { kind: 'connection', detail: cause?.cause?.code ?? cause?.code ?? err.message };
  }
  if ((err instanceof Anthropic.APIError || err instanceof OpenAI.APIError) && typeof err.status === 'number') {
    return { kind: 'http', status: err.status, detail: err.message, headers: err.headers };
  }
  return { kind: 'unreadable', detail: err instanceof Error ? err.message : String(err) };
}

function codeFor(seen: Seen): AiFailureCode {
  if (seen.kind === 'timeout') return 'ai_timeout';
  if (seen.kind === 'connection') return 'ai_provider_unavailable';
  if (seen.kind === 'unreadable') return 'ai_response_invalid';
  const s = seen.status;
  if (s === 401 || s === 403) return 'ai_provider_key_rejected';
  if (s === 402) return 'ai_provider_billing';
  if (s === 429) return 'ai_rate_limited';
  if (s === 408 || s >= 500) return 'ai_provider_unavailable';
  return 'ai_request_rejected';
}

function noteFor(code: AiFailureCode, seen: Seen, policy: CallPolicy): string {
  const p = policy.label;
  const detail = 'detail' in seen ? redact(seen.detail, policy.secret) : '';
  switch (code) {
    case 'ai_timeout':
      return `${p} did not answer within ${Math.round(policy.timeoutMs / 100) / 10} s. Try again later, or use a faster model.`;
    case 'ai_provider_unavailable':
      return seen.kind === 'connection'
        ? `${p} could not be reached (${detail}). Try again later; if it persists, check the provider's status page or the configured base URL.`
        : `${p} failed to answer (HTTP ${detail}). This is usually a passing outage or overload: try again later.`;
    case 'ai_provider_key_rejected':
      return `${p} rejected the API key (HTTP ${detail}). Check the key (and that it may use this model), then store it again.`;
    case 'ai_provider_billing':
      return `${p} refused the request for billing reasons (HTTP ${detail}). Add credit or fix billing on the ${p} account, then try again.`;
    case 'ai_rate_limited':
      return `${p} is rate-limiting this key (HTTP ${detail}). Wait a minute and try again, or raise the account's rate limit with ${p}.`;
    case 'ai_request_rejected':
      return `${p} refused the request (HTTP ${detail}). Check that the model exists and accepts images, and that the image is not too large.`;
    case 'ai_response_invalid':
      return `${p} sent an answer that could not be read (${detail}). Try again later.`;
  }
}

/** The failure `err` (thrown by either SDK) stands for. */
export function failureOf(err: unknown, policy: CallPolicy): AiFailure {
  if (err instanceof AiFailure) return err;
  const seen = classify(err);
  const code = codeFor(seen);
  return new AiFailure(code, noteFor(code, seen, policy));
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const s = Number(headers?.get('retry-after'));
  if (Number.isFinite(s) && s > 0) return s * 1000;
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Runs `call` (one or more SDK requests given `options`) until it succeeds, retrying an
 * outage or a rate limit up to policy.maxRetries times while time is left; every request
 * shares one deadline of policy.timeoutMs. Throws an AiFailure.
 */
export async function withRetries<T>(policy: CallPolicy, call: (options: SdkRequestOptions) => Promise<T>): Promise<T> {
  const deadline = Date.now() + policy.timeoutMs;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), policy.timeoutMs);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call({ signal: controller.signal, timeout: Math.max(1, deadline - Date.now()), maxRetries: 0 });
      } catch (err) {
        const seen = err instanceof AiFailure ? undefined : classify(err);
        const failure = controller.signal.aborted ? failureOf(new Anthropic.APIUserAbortError(), policy) : failureOf(err, policy);
        const retryable = failure.code === 'ai_provider_unavailable' || failure.code === 'ai_rate_limited';
        const wait = (seen?.kind === 'http' ? retryAfterMs(seen.headers) : undefined) ?? 500 * 2 ** attempt;
        // A wait that would outlast the deadline reports the real cause now, not a timeout later.
        if (!retryable || attempt >= policy.maxRetries || Date.now() + wait >= deadline - 50) throw failure;
        await sleep(wait, controller.signal);
        if (controller.signal.aborted) throw failureOf(new Anthropic.APIUserAbortError(), policy);
      }
    }
  } finally {
    clearTimeout(timer);
  }
}
