/**
 * Screenshot configurations, jobs, the archive and embed URLs (spec, "Screenshot
 * configurations"; DESIGN section 3). The api orchestrates: gates, then the credit
 * reserved under the job's id (so the job is charged once however often it runs), then
 * the configuration (scheduler) and the persisted job (capture); anything half-done is
 * undone before the error is answered.
 */
import sharp from 'sharp';
import type { TargetPolicy } from '../shared/address-policy';
import { Type } from '@sinclair/typebox';
import { type ConfigView, call } from '../shared/contracts';
import { billsAiCredits } from '../ai/public/ai-record';
import { FULL_RECORD_SCHEMA, fullRecord, JOB_ANSWER_SCHEMA, LISTED_RECORD_SCHEMA, listedRecord } from '../capture/public/screenshot-records';
import { CONFIG_RECORD_SCHEMA } from '../scheduler/public/config-record';
import { withCaptureCredits } from '../billing/public/credits';
import { ERROR_STATUS, type ErrorCode, isErrorCode, serviceError } from '../shared/errors';
import { CAPTURE_FAILURES } from './snap-routes';
import type { Paging } from '../shared/paging';
import { admission, type Spending } from './spend-admission';
import { type ConfigOptions, captureKey, refuseUnusedSchedule, type SnapOptions } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import type { FileStore } from '../shared/storage';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { PAGING_PARAMS } from './paging-params';
import { CONFIG_CREATE_PARAMS, CONFIG_UPDATE_PARAMS, type ConfigChanges, checkConfigChanges, KEY_ONLY_PARAMS, givenOptions } from './request-schemas';

const configView = (v: ConfigView): ConfigView => ({ config: v.config, ids: v.ids, created_at: v.created_at });

/**
 * Starts a capture job of a configuration: reserves the credits under the job's id (the
 * screenshot, and an AI credit for the service's own AI; 402 before anything is written),
 * then `configIdOf` (which may create the configuration), then records the job. On any
 * failure the credits are refunded and `undo` runs, so nothing half-done stays behind.
 */
async function startJob(
  ctx: RouteContext,
  jobId: string,
  options: ConfigOptions,
  configIdOf: () => Promise<string>,
  undo?: (configId: string) => Promise<unknown>,
): Promise<string> {
  const { broker, account } = ctx;
  let configId: string | null = null;
  return withCaptureCredits(
    broker,
    { account, amounts: { screenshots: 1 }, reservationId: `job:${jobId}` },
    billsAiCredits(options),
    async () => {
      configId = await configIdOf();
      await call(broker, 'capture.enqueue', { accountId: account.accountId, configId, jobId, kind: 'config', options });
      return configId;
    },
    {
      // The worker that runs the job reserves again under the same id, and settles it.
      settle: () => 'hold',
      analysed: () => true,
      onFailure: async () => {
        if (configId !== null) await undo?.(configId).catch(() => undefined);
        return 'refund';
      },
    },
  );
}

/**
 * What a configuration can name and spend. Creating one and capture-now start a job (its
 * screenshot and AI credits reserved here; the bandwidth is the job's); a PATCH spends nothing.
 */
const CONFIG: Omit<Spending, 'credits'> = { features: ['ownAi', 'ownProxy'], structuredFields: true, route: true, schedule: true };
const START_ADMISSION = admission({ ...CONFIG, credits: ['screenshots', 'ai_credits'] });
const CHANGE_ADMISSION = admission({ ...CONFIG, credits: [] });

/** POST /screenshot_configs (the console's configuration form calls it too). */
export async function createConfig(ctx: RouteContext<ConfigOptions>, policy: TargetPolicy) {
  const { broker, account } = ctx;
  const options = ctx.params;
  refuseUnusedSchedule(options);
  await START_ADMISSION.admit({ broker, account, policy, given: options });
  // The job id is chosen first so the configuration records it as its last job.
  const jobId = randomId(12);
  let embedUrl = '';
  const configId = await startJob(
    ctx,
    jobId,
    options,
    async () => {
      const created = await call(broker, 'scheduler.create', { accountId: account.accountId, input: { given: givenOptions(ctx.raw), options }, jobId });
      embedUrl = created.ids.embed_url;
      return created.ids.screenshot_config_id;
    },
    (id) => call(broker, 'scheduler.remove', { accountId: account.accountId, id }),
  );
  return { success: true, screenshot_configuration_id: configId, embed_url: embedUrl, job_id: jobId };
}

/** POST /screenshot_configs/:id/capture (the console's "Capture now" too). */
export async function captureNow(ctx: RouteContext, policy: TargetPolicy) {
  const existing = await call(ctx.broker, 'scheduler.get', { accountId: ctx.account.accountId, id: ctx.path.id ?? '' });
  // The stored configuration is admitted as a new one would be: a plan downgraded, a provider
  // key or an own proxy removed since it was stored answers now, before any credit; no fallback.
  await START_ADMISSION.admit({ broker: ctx.broker, account: ctx.account, policy, given: existing.options });
  const jobId = randomId(12);
  const configId = await startJob(ctx, jobId, existing.options, async () => existing.ids.screenshot_config_id);
  await noteJob(ctx, configId, jobId);
  return { success: true, job_id: jobId, embed_url: existing.ids.embed_url };
}

/**
 * Notes a started job as its configuration's latest. When the configuration was deleted while
 * the job was being started (after the delete's sweep of its jobs), the job is withdrawn as the
 * delete would have (deleted, its credit given back, anything it recorded removed) and the
 * answer is the delete's: 404. A job started before the configuration's row went is swept by
 * the delete itself (deleteConfig). Only an explicit `noted: false` withdraws: a scheduler of
 * the release before (still running during a roll-out) answers `{ ok: true }`. (A job that a
 * worker finished in the milliseconds between its start and this withdrawal stays charged, its
 * screenshot deleted with the configuration, as a delete after it finished would leave it.)
 */
async function noteJob(ctx: RouteContext, configId: string, jobId: string): Promise<void> {
  const { broker, account } = ctx;
  if ((await call(broker, 'scheduler.noteJob', { configId, jobId })).noted !== false) return;
  await call(broker, 'capture.deleteForConfig', { accountId: account.accountId, configId });
  throw serviceError('not_found', `No screenshot configuration "${configId}" in this account: it was deleted while this capture was being started.`);
}

/**
 * A snap's options captured as a background job (the console's capture builder: no page waits
 * on a capture): admitted and charged as capture-now is (the credit reserved under the job's
 * id, refunded when the job fails), recorded under the snap's own configuration of those
 * options, as /snap records its captures. Answers the job's id.
 */
export async function startSnapJob(ctx: RouteContext, policy: TargetPolicy, options: SnapOptions): Promise<string> {
  const { broker, account } = ctx;
  await START_ADMISSION.admit({ broker, account, policy, given: options });
  const jobId = randomId(12);
  const configId = await startJob(
    ctx,
    jobId,
    options as ConfigOptions,
    async () => (await call(broker, 'scheduler.snapConfig', { accountId: account.accountId, options, snapKey: captureKey(options) })).id,
  );
  await noteJob(ctx, configId, jobId);
  return jobId;
}

async function getConfig(ctx: RouteContext) {
  const v = await call(ctx.broker, 'scheduler.get', { accountId: ctx.account.accountId, id: ctx.path.id ?? '' });
  return { success: true, ...configView(v) };
}

/**
 * PATCH: the options given are merged over the stored ones (url may be left out: the stored
 * one is kept), and the merge is checked as a new configuration's options are. A PATCH that
 * names nothing to change is refused: a client whose update sent no body would otherwise be
 * told its change was made.
 */
export async function updateConfig(ctx: RouteContext<ConfigChanges>, policy: TargetPolicy) {
  const changes = ctx.params;
  const accountId = ctx.account.accountId;
  if (Object.keys(changes).length === 0) {
    // Sent, but empty (null or ""): an empty value counts as absent, and a PATCH removes no option.
    const emptied = Object.keys(ctx.raw).find((name) => ctx.raw[name] === null || ctx.raw[name] === '');
    if (emptied) {
      throw serviceError(
        'invalid_parameter',
        `${emptied}: an empty value (null or "") changes nothing: a PATCH adds and changes options and removes none. Send a new value, or ` +
          'create the configuration again without it.',
        { param: emptied },
      );
    }
    throw serviceError(
      'invalid_parameter',
      'No parameter to change arrived: send the options to change (such as url, wait or scheduled_screenshot=true with scheduled_every and ' +
        'scheduled_interval) as a JSON body, form fields or query parameters.',
    );
  }
  // The stored options, under the change, are what the configuration will run with (merged as the scheduler merges them):
  // what would fail every capture of it (PDF options on a JPEG, hover_on_selected with no selectors) is refused, nothing changed.
  // The update stores the change only over the options checked here: when another change was stored meanwhile, it is read
  // and checked again (two PATCHes side by side, each fine alone, could together make what neither check saw).
  for (let attempt = 1; ; attempt++) {
    let checked: ConfigOptions | undefined;
    const stored = async () => {
      checked = (await call(ctx.broker, 'scheduler.get', { accountId, id: ctx.path.id ?? '' })).options;
      checkConfigChanges(checked, changes);
      return checked;
    };
    await CHANGE_ADMISSION.admit({ broker: ctx.broker, account: ctx.account, policy, given: changes, stored });
    try {
      const v = await call(ctx.broker, 'scheduler.update', {
        accountId,
        id: ctx.path.id ?? '',
        input: { given: givenOptions(ctx.raw), options: changes },
        checked,
      });
      return { success: true, config: v.config };
    } catch (err) {
      if (attempt >= PATCH_ATTEMPTS || (err as { type?: unknown }).type !== 'configuration_changed') throw err;
    }
  }
}

/** How often a PATCH is checked again when other changes keep arriving in between (then configuration_changed, 409). */
const PATCH_ATTEMPTS = 3;

async function listConfigs(ctx: RouteContext<Paging>) {
  const paging = ctx.params;
  const { configs, has_more } = await call(ctx.broker, 'scheduler.list', { accountId: ctx.account.accountId, paging });
  return { success: true, screenshot_configurations: configs.map(configView), has_more };
}

/** DELETE /screenshot_configs/:id (the console's delete too). */
export async function deleteConfig(ctx: RouteContext) {
  const accountId = ctx.account.accountId;
  const v = await call(ctx.broker, 'scheduler.get', { accountId, id: ctx.path.id ?? '' });
  const configId = v.ids.screenshot_config_id;
  await call(ctx.broker, 'capture.deleteForConfig', { accountId, configId });
  await call(ctx.broker, 'notifier.deleteForConfig', { accountId, configId });
  await call(ctx.broker, 'scheduler.remove', { accountId, id: configId });
  // A job started (capture-now, a schedule's slot) between the sweep above and the row's end is swept now;
  // one started later finds no configuration to note it under and withdraws itself (noteJob).
  await call(ctx.broker, 'capture.deleteForConfig', { accountId, configId });
  return { success: true, deleted: true, screenshot_configuration: configView(v) };
}

async function listConfigScreenshots(ctx: RouteContext<Paging>) {
  const paging = ctx.params;
  const accountId = ctx.account.accountId;
  const v = await call(ctx.broker, 'scheduler.get', { accountId, id: ctx.path.id ?? '' });
  const { screenshots, has_more } = await call(ctx.broker, 'capture.listForConfig', { accountId, configId: v.ids.screenshot_config_id, paging });
  return { success: true, screenshots: screenshots.map(listedRecord), has_more };
}

async function listScreenshots(ctx: RouteContext<Paging>) {
  const paging = ctx.params;
  const { screenshots, has_more } = await call(ctx.broker, 'capture.listForAccount', { accountId: ctx.account.accountId, paging });
  return { success: true, screenshots: screenshots.map(fullRecord), has_more };
}

async function jobStatus(ctx: RouteContext) {
  const job = await call(ctx.broker, 'capture.jobStatus', { accountId: ctx.account.accountId, jobId: ctx.path.job_id ?? '' });
  if (job.status === 'completed') return { success: true, status: job.status, job_id: job.job_id, screenshot: listedRecord(job.screenshot) };
  if (job.status === 'failed') {
    // The failure's own status (e.g. 422 page_load_failed), with the job's state.
    const status = isErrorCode(job.error_code) ? ERROR_STATUS[job.error_code] : 500;
    ctx.reply.code(status);
    return { success: false, status: 'failed', job_id: job.job_id, error_code: job.error_code, note: job.note };
  }
  return { success: true, status: job.status, job_id: job.job_id };
}

let placeholder: Promise<Buffer> | null = null;
/** The service's own placeholder, drawn once per process. */
function servicePlaceholder(): Promise<Buffer> {
  placeholder ??= sharp(
    Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="800" height="500"><rect width="100%" height="100%" fill="#eef0f3"/><text x="50%" y="50%" ' +
        'font-family="sans-serif" font-size="28" fill="#8a93a0" text-anchor="middle">The first capture is on its way</text></svg>',
    ),
  )
    .png()
    .toBuffer();
  return placeholder;
}

function embedRoute(store: FileStore): RouteDef {
  return {
    method: 'GET',
    url: '/embed/:id',
    summary: "The configuration's latest image, without a key (the placeholder until the first capture).",
    tag: 'configurations',
    auth: false,
    response: { contentTypes: ['image/jpeg', 'image/png', 'image/webp', 'application/pdf'] },
    redirect: "Before the first capture, when the configuration has a placeholder_url: to it (the service's own placeholder image otherwise).",
    errors: ['not_found'],
    handler: async ({ broker, path, reply }) => {
      const id = path.id ?? '';
      const info = await call(broker, 'scheduler.embedInfo', { id });
      const latest = await call(broker, 'capture.latestImage', { configId: id });
      reply.header('cache-control', 'no-cache');
      if (latest) {
        const file = await store.get(latest.image_name);
        if (file) return reply.header('content-type', file.contentType).send(file.data);
      }
      if (info.placeholder_url) return reply.redirect(info.placeholder_url, 302);
      return reply.header('content-type', 'image/png').send(await servicePlaceholder());
    },
  };
}

const CONFIG_ERRORS: ErrorCode[] = ['invalid_parameter', 'not_found'];

export function configRoutes(store: FileStore, policy: TargetPolicy): RouteDef[] {
  return [
    route({
      method: 'POST',
      url: '/screenshot_configs',
      summary: 'Create a configuration (optionally scheduled) and start its first capture.',
      tag: 'configurations',
      params: CONFIG_CREATE_PARAMS,
      response: ok({ screenshot_configuration_id: Type.String(), embed_url: Type.String(), job_id: Type.String() }),
      errors: [...CONFIG_ERRORS, 'ai_provider_unsupported', ...START_ADMISSION.errors],
      handler: (ctx) => createConfig(ctx, policy),
    }),
    route({
      method: 'POST',
      url: '/screenshot_configs/:id/capture',
      summary: 'Start a capture now (the schedule is not disturbed).',
      tag: 'configurations',
      params: KEY_ONLY_PARAMS,
      response: ok({ job_id: Type.String(), embed_url: Type.String() }),
      // The stored configuration, admitted as a new one (its bandwidth is its job's: GET /jobs/:job_id).
      errors: [...CONFIG_ERRORS, ...START_ADMISSION.errors],
      handler: (ctx) => captureNow(ctx, policy),
    }),
    route({
      method: 'GET',
      url: '/screenshot_configs/:id',
      summary: 'A configuration: its options as given, ids and creation time (epoch ms).',
      tag: 'configurations',
      params: KEY_ONLY_PARAMS,
      response: ok(CONFIG_RECORD_SCHEMA.properties),
      errors: [...CONFIG_ERRORS],
      handler: getConfig,
    }),
    route({
      method: 'PATCH',
      url: '/screenshot_configs/:id',
      summary: 'Change options (url may be left out: the stored one is kept); leaving out scheduled_screenshot=true makes it one-time.',
      tag: 'configurations',
      params: CONFIG_UPDATE_PARAMS,
      response: ok({ config: CONFIG_RECORD_SCHEMA.properties.config }),
      errors: [...CONFIG_ERRORS, 'ai_provider_unsupported', 'configuration_changed', ...CHANGE_ADMISSION.errors],
      handler: (ctx) => updateConfig(ctx, policy),
    }),
    route({
      method: 'GET',
      url: '/screenshot_configs',
      summary: "The account's configurations, paged.",
      tag: 'configurations',
      params: PAGING_PARAMS,
      response: ok({ screenshot_configurations: Type.Array(CONFIG_RECORD_SCHEMA), has_more: Type.Boolean() }),
      errors: ['invalid_parameter'],
      handler: listConfigs,
    }),
    route({
      method: 'DELETE',
      url: '/screenshot_configs/:id',
      summary: 'Delete a configuration with its screenshots and their files.',
      tag: 'configurations',
      params: KEY_ONLY_PARAMS,
      response: ok({ deleted: Type.Boolean(), screenshot_configuration: CONFIG_RECORD_SCHEMA }),
      errors: [...CONFIG_ERRORS],
      handler: deleteConfig,
    }),
    route({
      method: 'GET',
      url: '/screenshot_configs/:id/screenshots',
      summary: "A configuration's screenshots, paged.",
      tag: 'archive',
      params: PAGING_PARAMS,
      response: ok({ screenshots: Type.Array(LISTED_RECORD_SCHEMA), has_more: Type.Boolean() }),
      errors: [...CONFIG_ERRORS],
      handler: listConfigScreenshots,
    }),
    route({
      method: 'GET',
      url: '/screenshots',
      summary: 'Every screenshot of the account, paged (full records).',
      tag: 'archive',
      params: PAGING_PARAMS,
      response: ok({ screenshots: Type.Array(FULL_RECORD_SCHEMA), has_more: Type.Boolean() }),
      errors: ['invalid_parameter'],
      handler: listScreenshots,
    }),
    route({
      method: 'GET',
      url: '/jobs/:job_id',
      summary: "A capture job's state: queued, running, completed (with the screenshot) or failed.",
      tag: 'configurations',
      params: KEY_ONLY_PARAMS,
      response: JOB_ANSWER_SCHEMA,
      // 503 capacity_exhausted too: a snap's job its service stopped under, or that the api gave up on.
      errors: [
        ...new Set<ErrorCode>([
          ...CONFIG_ERRORS,
          ...CAPTURE_FAILURES,
          'capacity_exhausted',
          'screenshot_limit_reached',
          'ai_credits_exhausted',
          'ai_provider_not_configured',
        ]),
      ],
      handler: jobStatus,
    }),
    embedRoute(store),
  ];
}
