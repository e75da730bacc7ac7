/**
 * The contracts between services: every action's name, params and result, written once.
 * `call(broker, 'billing.reserve', params)` is checked against this table, so a caller can
 * neither misname an action nor pass the wrong shape. Events are named in the past tense
 * and typed the same way: `emit(broker, 'capture.completed', payload)` against `Events`.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ServiceBroker, Context } from 'moleculer';
import type { ResearchExtraction, ResearchField, ResearchPageInput, ResearchReport, ResearchStatus } from './domain-research';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Paging } from './paging';
import { type AnalysisOptions, type CaptureTargets, type ConfigOptions, type SnapOptions, textEnum } from './screenshot-options';

export type UsageKind = 'screenshots' | 'ai_credits' | 'bandwidth_bytes' | 'research_domains';
export type UsageAmounts = Partial<Record<UsageKind, number>>;

export const ADDONS = ['byo_ai', 'byo_proxy', 'ai_credits', 'bandwidth_2gb'] as const;
export type Addon = (typeof ADDONS)[number];

export interface PlanRecord {
  name: string;
  /** Paid plans unlock the addons; the free plan does not. */
  paid: boolean;
  screenshot_limit: number;
  /** Captures an account on this plan may run at once, over every capture instance. */
  max_concurrent: number;
  /** Captures it may have waiting for a browser beyond those (/snap's held requests). */
  max_queued: number;
}

/** What `plans set` sends: the name, and the fields to set (a new plan needs screenshot_limit). */
export type PlanInput = Pick<PlanRecord, 'name'> & Partial<Omit<PlanRecord, 'name'>>;

/** What every authenticated request knows about its caller. */
export interface AccountContext {
  accountId: string;
  plan: PlanRecord;
  /** Addon name to quantity (1 for on/off addons; units for bandwidth_2gb). */
  addons: Partial<Record<Addon, number>>;
}

export interface Limits {
  screenshots: number;
  ai_credits: number;
  bandwidth_bytes: number;
  /** Domains of domain research jobs (one credit each). */
  research_domains: number;
}

/** Features that need an addon; checked before any credit is reserved. */
export interface FeatureRequest {
  ownAi?: boolean;
  ownProxy?: boolean;
}

export interface Reservation {
  id: string;
  accountId: string;
  month: string;
  amounts: UsageAmounts;
  /** When billing gives it back unless it was settled before (epoch ms; `settleWithinMs` when reserved). */
  settleBy?: number;
}

export interface AccountSummary {
  account_id: string;
  plan: string;
  addons: Partial<Record<Addon, number>>;
  created_at: string;
  active_keys: number;
}

/** A stored capture, as capture hands it to the api (the files stay in storage). */
export interface ScreenshotRef {
  id: string;
  job_id: string;
  config_id: string;
  embed_url: string;
  direct_link: string;
  direct_thumbnail_link: string;
  taken_at_ms: number;
  /** Storage object names, for the api to stream. */
  image_name: string | null;
  html_name: string | null;
  content_type: string | null;
  /** The analysis stored with the capture; null when none was asked for. */
  ai: AiRecord | null;
  /** The real location the capture went through (the name asked for), or null. */
  proxy_server: string | null;
  /** The own proxy it went through (host:port), or null. */
  custom_proxy: string | null;
  /** Bytes through the real location's upstream (0 otherwise). */
  bandwidth_bytes: number;
  /** The page reached its wait_until moment (false: captured as drawn at navigation_timeout); null for captures recorded before it was kept. */
  load_finished: boolean | null;
  /** The main document's final HTTP status; null when not known (and for captures recorded before it was kept). */
  status_code: number | null;
  /** The address the page ended on, after redirects; null when not known (and before it was kept). */
  final_url: string | null;
  /** What hide_selectors, remove_selectors, block_chats and block_overlays hid or removed; null (or absent) when none was asked for. */
  overlays?: OverlayRecordEntry[] | null;
  /** markdown=true's and metadata=true's storage objects (page text beside the picture), and their public links; null or absent when not asked for. */
  markdown_name?: string | null;
  metadata_name?: string | null;
  markdown_link?: string | null;
  metadata_link?: string | null;
  /** Where the capture was uploaded (store_to); null (or absent) when none was asked for. */
  stored_to?: StoredTo | null;
}

/** Where a capture was uploaded to an account's own bucket (services/proxy/public/storage-destination-record.ts). */
export type StoredTo = PublishedRecords['storedTo'];
/** An account's storage destination, never its secret (services/proxy/public/storage-destination-record.ts). */
export type StorageDestinationRecord = PublishedRecords['storageDestination'];

/** What POST /storage_destinations receives (the secret only here, sealed at once). */
export interface StorageDestinationInput {
  name: string;
  type: 's3' | 'gcs';
  bucket: string;
  endpoint?: string;
  region?: string;
  access_key_id?: string;
  secret_access_key?: string;
  /** gcs: the service account key, JSON. */
  credentials?: string;
}

/** One thing a capture hid or removed (services/capture/page/overlays.ts), as its record lists it. */
export interface OverlayRecordEntry {
  element: string;
  reason: 'hide_selectors' | 'remove_selectors' | 'chat' | 'overlay';
  selector?: string;
}

/**
 * The answers' records, each published as a schema by the service that owns it, in its public/
 * folder, with its type derived from the schema; the owner adds the type to this table
 * (`declare global { interface PublishedRecords { … } }`), so the kernel names the records of
 * the actions below without importing any service. A global augmentation, not a module one:
 * the incremental build checks every file again when one changes
 * (docs/decisions/2026-11-28-answers-typed-once.md).
 */
declare global {
  interface PublishedRecords {}
}

/** The spec's AI object of a capture (services/ai/public/ai-record.ts). */
export type AiRecord = PublishedRecords['aiRecord'];

/** ai_provider: the service's own AI (credits) or an own provider (the account's key). */
export type AiProvider = 'service' | OwnAiProvider;

/** Where the ai service reads a capture's image from (storage, never the transporter). */
export interface StoredImage {
  name: string;
  contentType: string;
}

/** The providers an account may store its own key for (the `:provider` of /ai/providers). */
export const OWN_AI_PROVIDERS = ['anthropic', 'openai', 'openrouter'] as const;
export type OwnAiProvider = (typeof OWN_AI_PROVIDERS)[number];
/** OpenRouter only: whose models, and whose endpoints, a request is routed to. */
export const UPSTREAMS = ['auto', 'anthropic', 'openai', 'google', 'meta'] as const;
export type Upstream = (typeof UPSTREAMS)[number];

/**
 * The spec's provider record (own AI account); an unverified provider with no key has only
 * provider, label and verified. The schema documents the HTTP answer; the type comes from it.
 */
export const PROVIDER_RECORD_SCHEMA = Type.Object({
  provider: textEnum(OWN_AI_PROVIDERS),
  label: Type.String(),
  verified: Type.Boolean({ description: 'Whether a verified key is stored.' }),
  key_hint: Type.Optional(Type.String({ description: 'Masked hint of the key; the key itself is never returned.' })),
  default_model: Type.Optional(Type.String()),
  default_upstream: Type.Optional(textEnum(UPSTREAMS, { description: 'OpenRouter only.' })),
  verified_at: Type.Optional(Type.String({ description: 'ISO 8601 UTC.' })),
  models_count: Type.Optional(Type.Integer({ description: 'Number of compatible models the key can use.' })),
  last_error: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
export type ProviderRecord = Static<typeof PROVIDER_RECORD_SCHEMA>;

/** The spec's model record. */
export const MODEL_RECORD_SCHEMA = Type.Object({
  id: Type.String({ description: 'Model id to pass as ai_model.' }),
  name: Type.String(),
  context_length: Type.Integer({ description: 'Input context in tokens; 0 when the provider does not say.' }),
  structured_outputs: Type.Boolean(),
  pricing: Type.Optional(
    Type.Object({ prompt: Type.String(), completion: Type.String() }, { description: 'OpenRouter only: price per token, as OpenRouter reports it.' }),
  ),
  disabled: Type.Boolean({ description: "Known but not available to the key (OpenAI's curated models the key cannot see)." }),
  source: Type.String({ description: 'The backend the entry came from.' }),
});
export type ModelRecord = Static<typeof MODEL_RECORD_SCHEMA>;

/** What one POST /ai/analyze may carry (the hosted service's numbers). */
export const IMAGE_ANALYSIS_LIMITS = {
  images: 5,
  prompts: 5,
  /** Characters of one prompt (as ai_prompt). */
  promptLength: 2500,
  /** Bytes of one image. */
  imageBytes: 20 * 1024 * 1024,
} as const;

/** The answer of POST /ai/analyze (without success): what ran, the images as read, one answer per prompt. */
export const IMAGE_ANALYSIS_SCHEMA = Type.Object({
  ai_provider: textEnum(['service', ...OWN_AI_PROVIDERS], { description: 'service (AI credits), or the own provider whose key was used.' }),
  ai_model: Type.Union([Type.String(), Type.Null()], { description: "The own provider's model; null for the service's own AI." }),
  images: Type.Array(
    Type.Object({
      url: Type.String({ description: 'As given.' }),
      content_type: textEnum(['image/png', 'image/jpeg', 'image/webp', 'image/gif'], {
        description: 'Judged by the bytes, not the name or the Content-Type served.',
      }),
      width: Type.Integer(),
      height: Type.Integer(),
      bytes: Type.Integer(),
    }),
    { description: 'The images, in the order given (Image 1, Image 2, ... to the model).' },
  ),
  results: Type.Array(Type.Object({ prompt: Type.String(), ai_response: Type.String() }), { description: 'One answer per prompt, in the order given.' }),
  ai_credits_used: Type.Integer({ description: "One per prompt with the service's own AI; 0 with an own provider." }),
});
export type ImageAnalysisAnswer = Static<typeof IMAGE_ANALYSIS_SCHEMA>;

/** A provider's compatible models as GET /ai/models shows them. */
export interface ModelList {
  provider: OwnAiProvider;
  /** The upstream filter applied (OpenRouter), else null. */
  upstream: Upstream | null;
  /** ISO 8601 UTC: when the list was fetched from the provider (it is cached ten minutes). */
  fetched_at: string;
  models: ModelRecord[];
}

/** Jobs that capture a configuration: started by a client (config) or by its schedule. */
export type CaptureJobKind = 'config' | 'scheduled';
/** Every kind the jobs queue holds: capture jobs, and one domain of a domain research job. */
export type JobKind = CaptureJobKind | 'research';

/** GET /jobs/:job_id, as capture reports it. */
export type JobStatus = (
  | { status: 'queued' | 'running'; job_id: string }
  | { status: 'completed'; job_id: string; screenshot: ScreenshotRef }
  | { status: 'failed'; job_id: string; error_code: string; note: string }
) & { timings?: JobTimings };

/** When a job was queued and when it ended (epoch ms; null while it runs), for the web console's capture page (GET /jobs does not show them). */
export interface JobTimings {
  queued_at_ms: number;
  finished_at_ms: number | null;
}

/** A web console session as billing resolves it (services/billing/console-sessions.ts): its account and the token its forms carry. */
export interface ConsoleSession {
  account: AccountContext;
  /** The per-session CSRF token every POST of the console must carry. */
  csrf: string;
  /** When the session ends at the latest (epoch ms), idle or not. */
  expires_at_ms: number;
}

/** Captures recorded on one UTC day (the console's chart of the month). */
export interface DailyCount {
  /** The day's first millisecond, UTC. */
  day_ms: number;
  screenshots: number;
}

/** A configuration as get, list, update and delete show it (services/scheduler/public/config-record.ts). */
export type ConfigView = PublishedRecords['configRecord'];

/** What create and update receive: the options as given (echoed) and validated (run). */
export interface ConfigInput {
  given: Record<string, unknown>;
  options: ConfigOptions;
}

/** A domain research request as the api validated it (capture gives it its ids). */
export interface ResearchInput {
  accountId: string;
  name: string | null;
  notes: string | null;
  structures: ResearchField[];
  /** ai_provider and ai_model. */
  aiOptions: AnalysisOptions;
  webhookUrl: string | null;
  /** As given, and the home page to read. */
  domains: Array<{ domain: string; url: string }>;
}

/** A PATCH: the options it changes (url may be left out: the stored one is kept). */
export interface ConfigChangeInput {
  given: Record<string, unknown>;
  options: Omit<ConfigOptions, 'url'> & { url?: string };
}

/** One registry's metrics as getMetricsAsJSON() gives them (plain data: it crosses the transporter; shared/metrics.ts merges them). */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** Action name -> [params, result]. */
export interface Actions {
  'billing.authenticate': [{ token: string }, AccountContext];
  /**
   * Web console sign-in: counts an attempt of `client` (429 rate_limited past CONSOLE_SIGNIN_MAX), authenticates the key as
   * authenticate does, and opens a session; `session` is the secret the console's cookie carries (stored only hashed).
   */
  /** `signIn: false`: a session reopened for the key the signed-in session just rotated, not counted as a sign-in attempt. */
  'billing.openSession': [{ token: string; client: string; signIn?: boolean }, ConsoleSession & { session: string }];
  /** The account of a console session, as authenticate maps a key (401 once it expired, or its key was revoked or rotated). */
  'billing.session': [{ session: string }, ConsoleSession];
  'billing.closeSession': [{ session: string }, { closed: boolean }];
  /** Counts a sign-in attempt of `client` in the same window as openSession (the operator view's sign-in): 429 rate_limited past CONSOLE_SIGNIN_MAX. */
  'billing.countSignIn': [{ client: string }, { ok: true }];
  'billing.checkFeatures': [{ account: AccountContext; features: FeatureRequest }, { ok: true }];
  /**
   * `reservationId` makes the reservation idempotent while pending (jobs use `job:<id>`).
   * `settleWithinMs`: the holder settles it within this long or has stopped (its process killed
   * mid-request); billing then gives it back (a snap's reservation: nothing was answered).
   */
  'billing.reserve': [
    { account: AccountContext; amounts: UsageAmounts; features?: FeatureRequest; reservationId?: string; settleWithinMs?: number },
    Reservation,
  ];
  /** The same for a caller that knows only the account id (scheduled work). */
  'billing.reserveFor': [{ accountId: string; amounts: UsageAmounts; reservationId: string; month?: string }, Reservation];
  'billing.commit': [{ reservation: Reservation }, { committed: boolean }];
  /** Gives back what a reservation held after its work was tried and failed (the docs' "refunded"). */
  'billing.refund': [{ reservation: Reservation }, { refunded: boolean }];
  /**
   * Gives back a reservation made for work that never ran, by its id (a job given up before it
   * ran): what it held, and nothing else; none pending (expired, or never made) is nothing to
   * give back. It never reserves, so it leaves no usage and no refusal behind. `month`: the
   * month it was reserved in (default: this one).
   */
  'billing.release': [{ accountId: string; reservationId: string; month?: string }, { released: boolean }];
  /**
   * What the account may still spend this month (each kind's limit less its usage), nothing
   * reserved. With `amounts`, 402 when they do not fit, the code and note a reservation of them
   * would get (the month's room checked before work that reserves later, or charges after).
   */
  'billing.checkRoom': [({ account: AccountContext } | { accountId: string }) & { amounts?: UsageAmounts }, { left: Limits; month: string }];
  /** Adds usage without a limit (what a finished capture used, such as its exact bandwidth). */
  'billing.charge': [{ accountId: string; amounts: UsageAmounts }, { charged: true }];
  'billing.usage': [{ account: AccountContext }, { limits: Limits; usage: Limits; month: string }];
  'billing.createAccount': [{ plan: string; addons?: Partial<Record<Addon, number>> }, { account_id: string; access_token: string }];
  'billing.listAccounts': [Record<string, never>, AccountSummary[]];
  'billing.setPlan': [{ accountId: string; plan: string; addons?: Partial<Record<Addon, number>> }, AccountSummary];
  'billing.rotateKey': [{ accountId: string }, { account_id: string; access_token: string }];
  'billing.listPlans': [Record<string, never>, PlanRecord[]];
  'billing.upsertPlan': [PlanInput, PlanRecord];
  /** The account behind an id (capture reads the plan's concurrency limits of a queued job's account). */
  'billing.account': [{ accountId: string }, AccountContext];
  /** The account's link signing secret (made on first use) and the public id its signed links name. */
  'billing.linkSecret': [{ accountId: string }, { secret: string; account: string }];
  /** A new link signing secret; the old one verifies for 24 hours more, or not at all with `revokePrevious`. */
  'billing.rotateLinkSecret': [{ accountId: string; revokePrevious: boolean }, { secret: string; account: string; previous_valid_until: string | null }];
  /** The signature of a signed link's canonical query (billing/public/signed-links.ts), made with the account's secret. */
  'billing.signLink': [{ accountId: string; canonical: string }, { signature: string }];
  /**
   * The account of a signed link whose signature verifies (403 invalid_signature otherwise, an
   * unknown account included), rate-limited as its key would be; 410 link_expired when it
   * verifies but `expires` (unix seconds) has passed.
   */
  'billing.verifyLink': [{ account: string; canonical: string; signature: string; expires: number | null }, AccountContext];
  /**
   * A snap's capture. `jobId` names its job and its place in the account's counts, given by the
   * api so that an attempt taken again on another instance (`attempt` 2 and on, after the
   * instance running it disappeared) is the same job and place; `since` is when the request
   * came (its place in the fair order); `targets`, what its store_to and own proxy pointed to
   * when it was admitted (part of its ttl key).
   */
  'capture.take': [{ account: AccountContext; options: SnapOptions; targets?: CaptureTargets; jobId: string; attempt: number; since: number }, ScreenshotRef];
  /** The api gave up on a snap whose instance disappeared: its job fails with this answer and its place in the counts is given back. */
  'capture.abandon': [{ accountId: string; jobId: string; errorCode: string; note: string }, { ok: true }];
  'capture.findRecent': [{ accountId: string; cacheKey: string; since: number }, ScreenshotRef | null];
  'capture.enqueue': [{ accountId: string; configId: string; jobId: string; kind: CaptureJobKind; options: SnapOptions }, { job_id: string }];
  'capture.jobStatus': [{ accountId: string; jobId: string }, JobStatus];
  'capture.listForConfig': [{ accountId: string; configId: string; paging: Paging }, { screenshots: ScreenshotRef[]; has_more: boolean }];
  'capture.listForAccount': [{ accountId: string; paging: Paging }, { screenshots: ScreenshotRef[]; has_more: boolean }];
  /** The account's captures recorded per UTC day in [fromMs, toMs) (days without any left out), oldest first. */
  'capture.dailyCounts': [{ accountId: string; fromMs: number; toMs: number }, DailyCount[]];
  'capture.latestImage': [{ configId: string }, { image_name: string; content_type: string } | null];
  /** Makes and stores a recorded thumbnail that is not stored yet (thumbnails are made when first asked for). */
  'capture.thumbnail': [{ name: string }, { made: boolean }];
  'capture.deleteForConfig': [{ accountId: string; configId: string }, { screenshots: number }];
  /** Writes a domain research request, a job per domain (queued), before its id is given out. */
  'capture.researchCreate': [{ input: ResearchInput }, ResearchStatus];
  /** 404 not_found for an unknown id, or another account's. */
  'capture.researchStatus': [{ accountId: string; id: string }, ResearchStatus];
  'capture.researchList': [{ accountId: string; paging: Paging }, { requests: ResearchStatus[]; has_more: boolean }];
  /**
   * Part of a report: the request's head when `from` is 0, then the domains from position
   * `from` on, as many as fit in one transporter message; `next` is where to go on (null: done).
   */
  'capture.researchReport': [
    { accountId: string; id: string; from: number },
    { head: Omit<ResearchReport, 'results'> | null; results: ResearchReport['results']; next: number | null },
  ];
  /** This capture node's metrics (services/capture/jobs/metrics.ts), for the api's GET /metrics. */
  /** This billing node's metrics (services/billing/metrics.ts). */
  'billing.metrics': [Record<string, never>, MetricsSnapshot];
  /** This api node's metrics (services/api/metrics.ts). */
  'api.metrics': [Record<string, never>, MetricsSnapshot];
  'capture.metrics': [Record<string, never>, MetricsSnapshot];
  /** This capture node's browsers and wait queue, for GET /pressure and GET /health. */
  'capture.pressure': [Record<string, never>, NodePressure];
  /** The accounts' fair-sharing state: captures running and waiting (cluster-wide with Redis) and their last start (the operator view). */
  'capture.accountSlots': [{ accountIds: string[] }, Array<{ account_id: string; running: number; waiting: number; last_start_ms: number | null }>];
  'scheduler.create': [{ accountId: string; input: ConfigInput; jobId: string }, ConfigView];
  /** With the options it runs with and its next scheduled run (epoch ms; null when not scheduled), as the scheduler computed it. */
  'scheduler.get': [{ accountId: string; id: string }, ConfigView & { options: ConfigOptions; next_run_at_ms?: number | null }];
  /** With `checked` (the options the change was checked against, as get answered them): configuration_changed when they are no longer stored. */
  'scheduler.update': [{ accountId: string; id: string; input: ConfigChangeInput; checked?: ConfigOptions }, ConfigView];
  'scheduler.list': [{ accountId: string; paging: Paging }, { configs: ConfigView[]; has_more: boolean }];
  'scheduler.remove': [{ accountId: string; id: string }, ConfigView];
  /** noted: false when the configuration is gone (deleted while its job was being started). */
  'scheduler.noteJob': [{ configId: string; jobId: string }, { noted: boolean }];
  'scheduler.embedInfo': [{ id: string }, { placeholder_url: string | null }];
  /**
   * The unscheduled configuration a snap is recorded under (created on its first snap); with `jobId`, that job is noted as
   * its latest in the same call (what noteJob does: a snap asks once, not twice).
   */
  'scheduler.snapConfig': [{ accountId: string; options: SnapOptions; snapKey: string; jobId?: string }, { id: string; embed_url: string }];
  'ai.verifiedProviders': [{ accountId: string }, string[]];
  /** Stores (replaces) a key after verifying it with the provider; own-AI gates apply. The only action that receives a key. */
  'ai.putKey': [{ account: AccountContext; provider: OwnAiProvider; apiKey: string; defaultModel?: string; defaultUpstream?: Upstream }, ProviderRecord];
  /** The three providers, always, each as the account has it. */
  'ai.listProviders': [{ accountId: string }, ProviderRecord[]];
  /** Anthropic and OpenAI need a stored verified key; OpenRouter's list is public. */
  'ai.listModels': [{ accountId: string; provider: OwnAiProvider; upstream?: Upstream }, ModelList];
  /** One real analysis of a sample image with the stored key; own-AI gates apply. */
  'ai.testProvider': [{ account: AccountContext; provider: OwnAiProvider; model?: string }, { text: string; model: string; seconds: number }];
  'ai.removeKey': [{ accountId: string; provider: OwnAiProvider }, { removed: boolean }];
  /**
   * Before any credit or capture, in the spec's order: the provider is configured (the
   * service's backend, or a verified own key), the model is compatible, the structured fields
   * are valid. Throws the spec's error; answers what the analysis will run on.
   */
  'ai.check': [{ accountId: string; options: AnalysisOptions }, { provider: AiProvider; model: string | null }];
  /** Analyses a stored capture. Never fails for the provider's sake: a failure is ai_analyzed false with ai_error. */
  'ai.analyze': [{ accountId: string; options: AnalysisOptions; image: StoredImage }, AiRecord];
  /**
   * POST /ai/analyze after its parameters, the plan gates and ai.check: checks every image's
   * host, reserves the AI credits, fetches and checks the images, asks the provider. Throws
   * the caller's error (the note names urls[i]) or the provider's (503, 502); credits refunded.
   */
  'ai.analyzeImages': [{ account: AccountContext; options: AnalysisOptions; urls: string[]; prompts: string[] }, ImageAnalysisAnswer];
  /** The fields of one research domain, from its pages' screenshots and text. Never fails for the provider's sake. */
  'ai.research': [
    { accountId: string; options: AnalysisOptions; domain: string; notes: string | null; fields: ResearchField[]; pages: ResearchPageInput[] },
    ResearchExtraction,
  ];
  /** This ai node's metrics (services/ai/metrics.ts). */
  'ai.metrics': [Record<string, never>, MetricsSnapshot];
  /** The account's signing secret (whsec_…), made on first use. */
  'notifier.webhookSecret': [{ accountId: string }, { secret: string }];
  /** A new signing secret; the old one keeps signing (a second signature) until previous_valid_until. */
  'notifier.rotateSecret': [{ accountId: string }, { secret: string; previous_valid_until: string }];
  'notifier.listDeliveries': [
    { accountId: string; configId?: string; status?: DeliveryStatus; paging: Paging },
    { deliveries: DeliveryView[]; has_more: boolean },
  ];
  'notifier.retryDelivery': [{ accountId: string; id: string }, DeliveryView];
  'notifier.listChangeNotifications': [
    /** history: text alerts carry their word diff (GET /screenshot_configs/:id/changes). */
    { accountId: string; configId?: string; paging: Paging; history?: boolean },
    { change_notifications: ChangeNotificationRecord[]; has_more: boolean },
  ];
  /** Deletes a configuration's deliveries (with their attempts), change readings and alerts. */
  'notifier.deleteForConfig': [{ accountId: string; configId: string }, { ok: true }];
  /** This notifier node's metrics (services/notifier/metrics.ts). */
  'notifier.metrics': [Record<string, never>, MetricsSnapshot];
  'proxy.summaries': [{ accountId: string }, Array<{ id: number; label: string; verified: boolean }>];
  /** The real-location names, sorted (GET /real_locations). */
  'proxy.realLocations': [Record<string, never>, string[]];
  /**
   * The route of one capture: the upstream proxy URL (credentials included: only the capture
   * service's gateway uses it, never a browser, an answer or a log), the location name for the
   * record. Null when the options ask for no route.
   */
  'proxy.route': [{ accountId: string; realLocation?: string; customProxyId?: number }, CaptureRoute | null];
  /** PUT /proxies: stores (or updates, with id) and tests unless test is false; a failed test throws its code after storing. */
  'proxy.put': [
    { account: AccountContext; input: { id?: number; protocol?: string; host?: string; port?: number; username?: string; password?: string }; test: boolean },
    { proxy: ProxyRecord & { display_url: string }; result: { exit_ip: string | null; ms: number } | null },
  ];
  'proxy.list': [{ accountId: string }, ProxyRecord[]];
  'proxy.test': [{ account: AccountContext; id: number }, { proxy: ProxyRecord; result: { exit_ip: string | null; ms: number } }];
  'proxy.remove': [{ accountId: string; id: number }, { removed: boolean }];
  /** POST /storage_destinations: checks, stores and tests (write then delete an object); a failed test stores nothing and throws its code. */
  'proxy.createDestination': [
    { accountId: string; input: StorageDestinationInput },
    { destination: StorageDestinationRecord; result: { key: string; ms: number } },
  ];
  'proxy.listDestinations': [{ accountId: string }, StorageDestinationRecord[]];
  /** By name or id; 404 not_found for another account's. */
  'proxy.getDestination': [{ accountId: string; nameOrId: string }, StorageDestinationRecord];
  'proxy.testDestination': [{ accountId: string; nameOrId: string }, { destination: StorageDestinationRecord; result: { key: string; ms: number } }];
  'proxy.removeDestination': [{ accountId: string; nameOrId: string }, { removed: true; name: string }];
  /**
   * Refuses (400 storage_destination_not_found) a store_to that names no destination of the
   * account, before any credit; `identity`: what it points to (CaptureTargets, for ttl reuse).
   */
  'proxy.checkDestination': [{ accountId: string; name: string }, { ok: true; identity: string }];
  /**
   * Uploads a stored capture file (read from storage, never sent over the transporter) to the
   * account's destination under `key`; throws 502 storage_upload_failed. The credentials never
   * leave the proxy service.
   */
  'proxy.storeFile': [{ accountId: string; destination: string; key: string; file: StoredImage }, StoredTo];
  /**
   * Refuses (400 invalid_parameter) a real_location that is not in the catalogue, and (412
   * custom_proxy_not_found) an own proxy that is not stored, before any credit; `identity`: what
   * an own proxy points to (CaptureTargets, for ttl reuse).
   */
  'proxy.checkRoute': [{ accountId: string; realLocation?: string; customProxyId?: number }, { ok: true; identity?: string }];
  /**
   * The operator's test of one real location (admin CLI): PROXY_TEST_URL fetched through the
   * upstream of one capture there. `target` is what a preset asked the provider for, `upstream`
   * its host:port (never its credentials); failures throw the own-proxy test's codes.
   */
  'proxy.testLocation': [{ name: string }, { location: string; via: string; target: string | null; upstream: string; exit_ip: string | null; ms: number }];
}

/** One capture node's load, as its browser pool sees it now. */
export interface NodePressure {
  /** Captures holding a browser. */
  running: number;
  /** Captures waiting for a browser. */
  queued: number;
  /** Browser sessions alive now (CAPTURE_SESSIONS once all have started). */
  slots: number;
  /** CAPTURE_SESSIONS. */
  slots_configured: number;
  /** CAPTURE_QUEUE_MAX. */
  queue_max: number;
  /** Captures refused with capacity_exhausted in the last minute. */
  recently_rejected: number;
}

/** An own proxy as the spec shows it, never its password (services/proxy/public/proxy-record.ts). */
export type ProxyRecord = PublishedRecords['proxyRecord'];

/** How one capture goes out (proxy.route). */
export interface CaptureRoute {
  upstream: string;
  /** The real location asked for (records' proxy_server), or null. */
  location: string | null;
  /** The own proxy's host:port (records' custom_proxy), or null. */
  customProxy: string | null;
}

/** The spec's change notification record, also the change alert's webhook body (services/notifier/public/webhook-records.ts). */
export type ChangeNotificationRecord = PublishedRecords['changeNotification'];

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One delivery as the log shows it (GET /webhook_deliveries), with every attempt (services/notifier/public/webhook-records.ts). */
export type DeliveryView = PublishedRecords['delivery'];

export type ActionName = keyof Actions;
export type ParamsOf<A extends ActionName> = Actions[A][0];
export type ResultOf<A extends ActionName> = Actions[A][1];

/** A typed broker.call. */
export function call<A extends ActionName>(
  caller: ServiceBroker | Context,
  action: A,
  params: ParamsOf<A>,
  opts?: { timeout?: number; meta?: Record<string, unknown>; nodeID?: string; tracking?: boolean },
): Promise<ResultOf<A>> {
  return (caller as ServiceBroker).call(action, params, opts) as Promise<ResultOf<A>>;
}

/** Typed handler signature for a service's action table. */
export type Handler<A extends ActionName> = (ctx: Context<ParamsOf<A>>) => Promise<ResultOf<A>>;

/** Event name -> payload. Emitted to every service that listens (Moleculer's balanced emit). */
export interface Events {
  /** A queued job (config or scheduled) was written: capture instances look for work. */
  'capture.jobQueued': { jobId: string };
  /** A queued job's screenshot is stored and its credit committed. */
  'capture.completed': { accountId: string; configId: string; jobId: string; screenshotId: string };
  /** A domain research job's last domain finished (its webhook delivery, if any, is due). */
  'capture.researchEnded': { accountId: string; researchId: string };
  /** Webhook deliveries were written for the account outside a job's completion (a snap's change alerts, a visual comparison): one notifier claims them now, not at its poll. */
  'notifier.deliveriesAdded': { accountId: string };
  /** A configuration's screenshots and jobs were deleted (it is being removed): broadcast to every capture instance, each forgets it (capture/jobs/snap-configs.ts). */
  'capture.configDeleted': { accountId: string; configId: string };
  /**
   * An account's key, plan or add-ons changed (accountId), or a plan of the catalogue (plan):
   * broadcast to every billing instance, each of which forgets what it kept of them (billing/account-cache.ts).
   */
  'billing.accountsChanged': { accountId: string } | { plan: string };
}

export type EventName = keyof Events;

/** A typed broker.emit. */
export function emit<E extends EventName>(emitter: ServiceBroker | Context, event: E, payload: Events[E]): Promise<void> {
  return (emitter as ServiceBroker).emit(event, payload);
}

/** A typed broker.broadcast: to every instance of the `groups` services that listen (not one per service, as emit). */
export function broadcast<E extends EventName>(emitter: ServiceBroker | Context, event: E, payload: Events[E], groups?: string[]): Promise<void> {
  return (emitter as ServiceBroker).broadcast(event, payload, groups ?? {});
}

/** Typed handler signature for a service's event table. */
export type EventHandler<E extends EventName> = (ctx: Context<Events[E]>) => void | Promise<void>;
