/**
 * billing's tables: plans, accounts, account_addons, api_keys. Only the billing service
 * uses this module.
 */
import type { Knex } from 'knex';
import { ADDONS, type AccountContext, type AccountSummary, type Addon, type PlanInput, type PlanRecord } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import { hashApiKey, newApiKey, randomId } from '../shared/secrets';

type AddonMap = Partial<Record<Addon, number>>;

const PLAN_COLUMNS = ['p.name', 'p.paid', 'p.screenshot_limit', 'p.max_concurrent', 'p.max_queued'];

function planRow(row: { name: string; paid: unknown; screenshot_limit: unknown; max_concurrent: unknown; max_queued: unknown }): PlanRecord {
  return {
    name: row.name,
    paid: Boolean(row.paid),
    screenshot_limit: Number(row.screenshot_limit),
    max_concurrent: Number(row.max_concurrent),
    max_queued: Number(row.max_queued),
  };
}

/** The bounds of a plan's numbers; the note names the field and its rule. */
const PLAN_NUMBERS: Array<{ field: 'screenshot_limit' | 'max_concurrent' | 'max_queued'; min: number; max: number }> = [
  { field: 'screenshot_limit', min: 0, max: Number.MAX_SAFE_INTEGER },
  { field: 'max_concurrent', min: 1, max: 10_000 },
  { field: 'max_queued', min: 0, max: 10_000 },
];

function toIso(value: unknown): string {
  const d = value instanceof Date ? value : new Date(String(value).replace(' ', 'T') + (String(value).includes('Z') ? '' : 'Z'));
  return Number.isNaN(d.getTime()) ? String(value) : d.toISOString();
}

/** Parses "byo_ai,byo_proxy,bandwidth_2gb:3" into {byo_ai:1, byo_proxy:1, bandwidth_2gb:3}. */
export function parseAddons(list: string): AddonMap {
  const addons: AddonMap = {};
  for (const item of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, qty] = item.split(':');
    if (!(ADDONS as readonly string[]).includes(name ?? '')) {
      throw serviceError('invalid_parameter', `Unknown addon "${name}"; known addons: ${ADDONS.join(', ')}.`);
    }
    const quantity = qty === undefined ? 1 : Number(qty);
    if (!Number.isInteger(quantity) || quantity < 0 || quantity > 10_000) {
      throw serviceError('invalid_parameter', `Addon "${name}" quantity must be a whole number from 0 to 10000.`);
    }
    addons[name as Addon] = quantity;
  }
  return addons;
}

/** An account and its plan, one row per add-on (addon null when it has none), as one AccountContext; null for no rows. */
function contextOf(rows: Array<Parameters<typeof planRow>[0] & { account_id: string; addon: string | null; quantity: unknown }>): AccountContext | null {
  const [first] = rows;
  if (!first) return null;
  const addons: AddonMap = {};
  for (const r of rows) if (r.addon !== null && Number(r.quantity) > 0) addons[r.addon as Addon] = Number(r.quantity);
  return { accountId: first.account_id, plan: planRow(first), addons };
}

export class AccountRepository {
  constructor(private readonly db: Knex) {}

  async plan(name: string): Promise<PlanRecord> {
    const row = await this.db('plans').where({ name }).first();
    if (!row) {
      const known = (await this.listPlans()).map((p) => p.name).join(', ');
      throw serviceError('invalid_parameter', `Unknown plan "${name}"; plans in the catalogue: ${known}.`);
    }
    return planRow(row);
  }

  async listPlans(): Promise<PlanRecord[]> {
    return (await this.db('plans').orderBy('name')).map(planRow);
  }

  /**
   * Adds a plan or changes the fields given of one. A new plan needs screenshot_limit; it is
   * paid unless told otherwise, and takes the default concurrency limits (the columns' own).
   */
  async upsertPlan(plan: PlanInput): Promise<PlanRecord> {
    if (!/^[a-z0-9_-]{1,64}$/.test(plan.name)) {
      throw serviceError('invalid_parameter', 'Plan name must be 1 to 64 lowercase letters, digits, "_" or "-".');
    }
    for (const { field, min, max } of PLAN_NUMBERS) {
      const v = plan[field];
      if (v !== undefined && Number.isInteger(v) && v > max) throw serviceError('invalid_parameter', `${field} is too large: at most ${max}.`);
      if (v !== undefined && (!Number.isInteger(v) || v < min || v > max)) {
        throw serviceError('invalid_parameter', `${field} must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}.`);
      }
    }
    const fields = Object.fromEntries(
      (['paid', 'screenshot_limit', 'max_concurrent', 'max_queued'] as const).filter((k) => plan[k] !== undefined).map((k) => [k, plan[k]]),
    );
    const exists = await this.db('plans').where({ name: plan.name }).first('name');
    if (exists) {
      if (Object.keys(fields).length) await this.db('plans').where({ name: plan.name }).update(fields);
    } else {
      if (plan.screenshot_limit === undefined)
        throw serviceError('invalid_parameter', `A new plan needs screenshot_limit (there is no plan "${plan.name}" yet).`);
      await this.db('plans').insert({ paid: true, ...fields, name: plan.name });
    }
    return this.plan(plan.name);
  }

  private async addonsOf(accountId: string): Promise<AddonMap> {
    const rows = await this.db('account_addons').where({ account_id: accountId });
    const addons: AddonMap = {};
    for (const r of rows) if (Number(r.quantity) > 0) addons[r.addon as Addon] = Number(r.quantity);
    return addons;
  }

  private async writeAddons(trx: Knex.Transaction, accountId: string, addons: AddonMap): Promise<void> {
    await trx('account_addons').where({ account_id: accountId }).delete();
    const rows = Object.entries(addons)
      .filter(([, q]) => (q ?? 0) > 0)
      .map(([addon, quantity]) => ({ account_id: accountId, addon, quantity }));
    if (rows.length) await trx('account_addons').insert(rows);
  }

  async create(planName: string, addons: AddonMap): Promise<{ account_id: string; access_token: string }> {
    await this.plan(planName);
    const accountId = `acct_${randomId(9)}`;
    const token = newApiKey();
    await this.db.transaction(async (trx) => {
      await trx('accounts').insert({ id: accountId, plan: planName });
      await this.writeAddons(trx, accountId, addons);
      await trx('api_keys').insert({ account_id: accountId, key_hash: hashApiKey(token) });
    });
    return { account_id: accountId, access_token: token };
  }

  /**
   * The account behind an active key, or null for an unknown or revoked key: its plan and
   * add-ons in one read (one row per add-on, or one without any).
   */
  async byToken(token: string): Promise<AccountContext | null> {
    return this.byKeyHash(hashApiKey(token));
  }

  /** byToken by the key's hash (billing's cache is keyed by it). */
  async byKeyHash(keyHash: string): Promise<AccountContext | null> {
    const rows = await this.withAddons(this.db('api_keys as k').join('accounts as a', 'a.id', 'k.account_id'))
      .where('k.key_hash', keyHash)
      .whereNull('k.revoked_at');
    return contextOf(rows);
  }

  async byId(accountId: string): Promise<AccountContext | null> {
    return contextOf(await this.withAddons(this.db('accounts as a')).where('a.id', accountId));
  }

  /** The account's plan and each of its add-ons joined to `q` (which names the account `a`). */
  private withAddons(q: Knex.QueryBuilder): Knex.QueryBuilder {
    return q
      .join('plans as p', 'p.name', 'a.plan')
      .leftJoin('account_addons as ad', 'ad.account_id', 'a.id')
      .select('a.id as account_id', ...PLAN_COLUMNS, 'ad.addon as addon', 'ad.quantity as quantity');
  }

  async summary(accountId: string): Promise<AccountSummary> {
    const account = await this.db('accounts').where({ id: accountId }).first();
    if (!account) throw serviceError('not_found', `No account "${accountId}".`);
    const keys = await this.db('api_keys').where({ account_id: accountId }).whereNull('revoked_at').count({ n: '*' });
    return {
      account_id: accountId,
      plan: account.plan,
      addons: await this.addonsOf(accountId),
      created_at: toIso(account.created_at),
      active_keys: Number(keys[0]?.n ?? 0),
    };
  }

  async list(): Promise<AccountSummary[]> {
    const rows = await this.db('accounts').orderBy('created_at').orderBy('id').select('id');
    return Promise.all(rows.map((r) => this.summary(r.id)));
  }

  async setPlan(accountId: string, planName: string, addons?: AddonMap): Promise<AccountSummary> {
    await this.plan(planName);
    await this.db.transaction(async (trx) => {
      const changed = await trx('accounts').where({ id: accountId }).update({ plan: planName });
      if (!changed) throw serviceError('not_found', `No account "${accountId}".`);
      if (addons) await this.writeAddons(trx, accountId, addons);
    });
    return this.summary(accountId);
  }

  /** Revokes every active key of the account and issues one new key, atomically. */
  async rotateKey(accountId: string): Promise<{ account_id: string; access_token: string }> {
    const token = newApiKey();
    await this.db.transaction(async (trx) => {
      const exists = await trx('accounts').where({ id: accountId }).first('id');
      if (!exists) throw serviceError('not_found', `No account "${accountId}".`);
      await trx('api_keys').where({ account_id: accountId }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
      await trx('api_keys').insert({ account_id: accountId, key_hash: hashApiKey(token) });
    });
    return { account_id: accountId, access_token: token };
  }
}
