/**
 * Webhooks (DESIGN section 3): the account's signing secret and its rotation, and the
 * delivery log (beyond the spec, as Stripe and Svix keep one): every delivery with its
 * attempts, filterable by configuration and status, and a retry by hand.
 */
import { Type } from '@sinclair/typebox';
import { CHANGE_NOTIFICATION_SCHEMA, DELIVERY_SCHEMA } from '../notifier/public/webhook-records';
import { DELIVERY_STATUSES, type DeliveryStatus, call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import type { Paging } from '../shared/paging';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { PAGING_PARAMS, parsePaging } from './paging-params';
import type { ParamShape } from './request-schemas';
import { KEY_ONLY_PARAMS } from './request-schemas';

interface DeliveryFilter {
  paging: Paging;
  configId?: string;
  status?: DeliveryStatus;
}

/** Paging, plus `screenshot_configuration_id` and `status` filters. */
const DELIVERY_LIST_PARAMS: ParamShape<DeliveryFilter> = {
  schema: {
    ...PAGING_PARAMS.schema,
    properties: {
      ...(PAGING_PARAMS.schema.properties as Record<string, unknown>),
      screenshot_configuration_id: { type: 'string', maxLength: 64, description: 'Only the deliveries of this configuration.' },
      status: { type: 'string', enum: [...DELIVERY_STATUSES], description: 'Only deliveries in this state.' },
    },
  },
  parse(raw) {
    const { screenshot_configuration_id: configId, status, ...rest } = raw;
    const filter: DeliveryFilter = { paging: parsePaging(rest, ['screenshot_configuration_id', 'status']) };
    if (configId !== undefined && configId !== '') {
      if (typeof configId !== 'string' || configId.length > 64)
        throw serviceError('invalid_parameter', 'screenshot_configuration_id: must be a configuration id.');
      filter.configId = configId;
    }
    if (status !== undefined && status !== '') {
      if (!(DELIVERY_STATUSES as readonly unknown[]).includes(status)) {
        throw serviceError('invalid_parameter', `status: must be one of ${DELIVERY_STATUSES.join(', ')}; got ${JSON.stringify(status)}.`);
      }
      filter.status = status as DeliveryStatus;
    }
    return filter;
  },
};

async function listDeliveries(ctx: RouteContext<DeliveryFilter>) {
  const { paging, configId, status } = ctx.params;
  const accountId = ctx.account.accountId;
  // An unknown (or another account's) configuration is 404, as on every configuration route.
  if (configId) await call(ctx.broker, 'scheduler.get', { accountId, id: configId });
  const page = await call(ctx.broker, 'notifier.listDeliveries', { accountId, paging, ...(configId ? { configId } : {}), ...(status ? { status } : {}) });
  return { success: true, webhook_deliveries: page.deliveries, has_more: page.has_more };
}

export const WEBHOOK_ROUTES: RouteDef[] = [
  route({
    method: 'GET',
    url: '/webhook_secret',
    summary: "The account's webhook signing secret (whsec_…): verify deliveries' webhook-signature with it (Standard Webhooks).",
    tag: 'webhooks',
    params: KEY_ONLY_PARAMS,
    response: ok({ secret: Type.String() }),
    errors: ['invalid_parameter', 'secrets_not_configured', 'secret_unreadable'],
    handler: async (ctx) => ({ success: true, ...(await call(ctx.broker, 'notifier.webhookSecret', { accountId: ctx.account.accountId })) }),
  }),
  route({
    method: 'POST',
    url: '/webhook_secret/rotate',
    summary: 'A new signing secret; for 24 hours deliveries carry a second signature made with the old one.',
    tag: 'webhooks',
    params: KEY_ONLY_PARAMS,
    response: ok({ secret: Type.String(), previous_valid_until: Type.String() }),
    errors: ['invalid_parameter', 'secrets_not_configured'],
    handler: async (ctx) => ({ success: true, ...(await call(ctx.broker, 'notifier.rotateSecret', { accountId: ctx.account.accountId })) }),
  }),
  route({
    method: 'GET',
    url: '/webhook_deliveries',
    summary: 'Capture deliveries and change alerts with every attempt, paged; filter by screenshot_configuration_id and status.',
    tag: 'webhooks',
    params: DELIVERY_LIST_PARAMS,
    response: ok({ webhook_deliveries: Type.Array(DELIVERY_SCHEMA), has_more: Type.Boolean() }),
    errors: ['invalid_parameter', 'not_found'],
    handler: listDeliveries,
  }),
  route({
    method: 'POST',
    url: '/webhook_deliveries/:id/retry',
    summary: 'Attempts a delivery again at once (a failed one gets one more attempt).',
    tag: 'webhooks',
    params: KEY_ONLY_PARAMS,
    response: ok({ webhook_delivery: DELIVERY_SCHEMA }),
    errors: ['invalid_parameter', 'not_found'],
    handler: async (ctx) => ({
      success: true,
      webhook_delivery: await call(ctx.broker, 'notifier.retryDelivery', { accountId: ctx.account.accountId, id: ctx.path.id ?? '' }),
    }),
  }),
];

async function listChangeNotifications(ctx: RouteContext<Paging>) {
  const accountId = ctx.account.accountId;
  let configId: string | undefined;
  if (ctx.path.id !== undefined) configId = (await call(ctx.broker, 'scheduler.get', { accountId, id: ctx.path.id })).ids.screenshot_config_id;
  const page = await call(ctx.broker, 'notifier.listChangeNotifications', { accountId, paging: ctx.params, ...(configId ? { configId } : {}) });
  return { success: true, change_notifications: page.change_notifications, has_more: page.has_more };
}

/** A configuration's change history: every alert, a visual one with its images and boxes, a text one with its word diff. */
async function listChanges(ctx: RouteContext<Paging>) {
  const accountId = ctx.account.accountId;
  const configId = (await call(ctx.broker, 'scheduler.get', { accountId, id: ctx.path.id ?? '' })).ids.screenshot_config_id;
  const page = await call(ctx.broker, 'notifier.listChangeNotifications', { accountId, paging: ctx.params, configId, history: true });
  return { success: true, changes: page.change_notifications, has_more: page.has_more };
}

/** The change notification endpoints (spec, "Change notifications"), plus has_more. */
export const CHANGE_NOTIFICATION_ROUTES: RouteDef[] = [
  route({
    method: 'GET',
    url: '/change_notifications',
    summary: 'Change alerts of every configuration of the account, paged.',
    tag: 'change notifications',
    params: PAGING_PARAMS,
    response: ok({ change_notifications: Type.Array(CHANGE_NOTIFICATION_SCHEMA), has_more: Type.Boolean() }),
    errors: ['invalid_parameter'],
    handler: listChangeNotifications,
  }),
  route({
    method: 'GET',
    url: '/screenshot_configs/:id/change_notifications',
    summary: "A configuration's change alerts, paged.",
    tag: 'change notifications',
    params: PAGING_PARAMS,
    response: ok({ change_notifications: Type.Array(CHANGE_NOTIFICATION_SCHEMA), has_more: Type.Boolean() }),
    errors: ['invalid_parameter', 'not_found'],
    handler: listChangeNotifications,
  }),
  route({
    method: 'GET',
    url: '/screenshot_configs/:id/changes',
    summary:
      "A configuration's change history, paged (before/after filters): every detected change, a visual one with the links of its before, after and diff images and its boxes, a text one with its word diff.",
    tag: 'change notifications',
    params: PAGING_PARAMS,
    response: ok({ changes: Type.Array(CHANGE_NOTIFICATION_SCHEMA), has_more: Type.Boolean() }),
    errors: ['invalid_parameter', 'not_found'],
    handler: listChanges,
  }),
];
