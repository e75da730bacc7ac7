/**
 * The provider layer's vocabulary: what the ai service asks of a provider (AiClient), what it
 * gets back, and the one error a provider call ends in (AiFailure). Nothing here talks to a
 * network; the clients live beside it (anthropic.ts, openai.ts, openrouter.ts).
 */
import type { ModelRecord, OwnAiProvider, Upstream } from '../../shared/contracts';

/** The spec's model record and OpenRouter's upstreams are contracts (shared/contracts.ts). */
export type { ModelRecord, Upstream };
export type ProviderName = OwnAiProvider;
/** The operator's SERVICE_AI_PROVIDER: a provider, or any server that speaks OpenAI's chat completions. */
export type BackendKind = ProviderName | 'openai-compatible';

export type ImageContentType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

/** One image of a request; `label`, when given, is sent as text just before it (which image is which). */
export interface AnalysisImage {
  data: Buffer;
  contentType: ImageContentType;
  label?: string;
}

/**
 * What a request that is not a capture's analysis asks (the analysis of any image, domain
 * research): its own wording, the JSON Schema its answer must follow, and the check of an
 * answer against what was asked (an AiFailure 'ai_response_invalid' when it does not hold).
 */
export interface AnalysisTask {
  system: string;
  /** Given after the images. */
  text: string;
  schema: Record<string, unknown>;
  check(answer: unknown): Record<string, unknown>;
}

export interface StructuredField {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'enum' | 'multi';
  description?: string;
  options?: string[];
}

export interface AnalysisRequest {
  /** At least one. */
  images: AnalysisImage[];
  /** A task's own wording and schema instead of a capture's simple or structured analysis (mode and what follows it are then not read). */
  task?: AnalysisTask;
  mode: 'simple' | 'structured';
  /** Simple mode; DEFAULT_PROMPT when absent or blank. */
  prompt?: string;
  /** Structured mode: the fields the answer must have, exactly. */
  fields?: StructuredField[];
  /** Structured mode: context for the model (ai_structured_instructions). */
  instructions?: string;
  model: string;
  /** OpenRouter only; ignored elsewhere. */
  upstream?: Upstream;
}

export interface AnalysisResult {
  /** Simple mode: the answer. Structured mode: JSON.stringify(structured). */
  text: string;
  /** Structured mode: the validated object, with exactly the fields asked for. */
  structured: Record<string, unknown> | null;
  /** The model that answered, as the provider reports it. */
  model: string;
}

export interface AiClient {
  /** Proves the key with the provider. Fails with ai_provider_key_rejected or ai_provider_unavailable (or another AiFailure). */
  verifyKey(): Promise<{ modelsCount: number }>;
  /** Vision-capable models with structured outputs; `upstream` filters OpenRouter's list by model vendor. */
  listModels(upstream?: Upstream): Promise<ModelRecord[]>;
  analyze(req: AnalysisRequest): Promise<AnalysisResult>;
}

export interface AiClientOptions {
  /** The provider key; optional for OpenRouter's public model list and for an openai-compatible server without auth. */
  apiKey?: string;
  /** Overrides the provider's public endpoint (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, OPENROUTER_BASE_URL, SERVICE_AI_BASE_URL). */
  baseUrl?: string;
  /** The most one call (verifyKey, listModels, analyze), retries included, may take (AI_TIMEOUT_MS). */
  timeoutMs: number;
  /** Further attempts after an outage or a rate limit, inside timeoutMs; default 1. */
  maxRetries?: number;
}

/**
 * The `ai_error.error_code` values a failed analysis carries, and what a key check or a model
 * list fails with. Each AiFailure's message is a note saying what happened and what to do.
 */
export const AI_FAILURES = [
  /** 401/403: the provider does not accept the key. */
  'ai_provider_key_rejected',
  /** 402: the provider account has no credit or a billing problem. */
  'ai_provider_billing',
  /** 429. */
  'ai_rate_limited',
  /** Unreachable, 5xx, Anthropic's 529 overloaded. */
  'ai_provider_unavailable',
  /** No answer within timeoutMs. */
  'ai_timeout',
  /** Any other 4xx: unknown model, image too large, request the provider refuses. */
  'ai_request_rejected',
  /** An answer that is not valid JSON, does not match the fields, was cut off or refused. */
  'ai_response_invalid',
] as const;
export type AiFailureCode = (typeof AI_FAILURES)[number];

/** A failure of the provider or of its answer; the message is the note (never the key). */
export class AiFailure extends Error {
  override readonly name = 'AiFailure';
  constructor(
    readonly code: AiFailureCode,
    note: string,
  ) {
    super(note);
  }
  get note(): string {
    return this.message;
  }
}

/** The prompt of a simple analysis that names none. */
export const DEFAULT_PROMPT = 'Describe this screenshot of a web page: what it shows, its main text and anything notable.';
