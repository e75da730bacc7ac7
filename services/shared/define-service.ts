/**
 * The one way to write a service's schema: its actions declared against the `Actions`
 * contract by their local names, its events against `Events`, and the database of the
 * tables it owns released after its own `stopped()`. The compiler checks every handler's
 * params and result against the contract: a misspelt action, a missing one or a wrong
 * result fails `tsc`, with no cast anywhere.
 */
import type { Knex } from 'knex';
import type { ActionHandler as BrokerActionHandler, Context, Service, ServiceActionsSchema, ServiceEvents, ServiceSchema } from 'moleculer';
import type { Config } from './config';
import type { ActionName, EventHandler, EventName, ParamsOf, ResultOf } from './contracts';
import { acquireDatabase, releaseDatabase } from './database';

type ServiceOf<A> = A extends `${infer S}.${string}` ? S : never;
/** Every service named in the contract: 'billing', 'capture', … */
export type ServiceName = ServiceOf<ActionName>;

/** What answers one action (a plain value or a promise of it). */
export type ActionHandler<A extends ActionName> = (ctx: Context<ParamsOf<A>>) => ResultOf<A> | Promise<ResultOf<A>>;

/** An action: its handler, or its handler with the broker's timeout for it. */
export type ActionDef<A extends ActionName> = ActionHandler<A> | { handler: ActionHandler<A>; timeout?: number };

/** Every action the contract gives service S, by its local name ('webhookSecret' for 'notifier.webhookSecret'), and no other. */
export type ActionTable<S extends ServiceName> = { [N in LocalName<S>]: ActionDef<Extract<`${S}.${N}`, ActionName>> };
type LocalName<S extends ServiceName> = ActionName extends infer A ? (A extends `${S}.${infer N}` ? N : never) : never;

/** Any action of any service, as the broker takes it. */
type SomeActionDef = BrokerActionHandler | { handler: BrokerActionHandler; timeout?: number };

/** The events a service listens to (any of the contract's). */
export type EventTable = { [E in EventName]?: EventHandler<E> };

/**
 * The database of the tables a service owns: this process's shared Knex, acquired on first
 * use (in `created()`, where the service builds its repositories) and given back by
 * defineService after the service's own `stopped()`.
 */
export class ServiceDatabase {
  private db: Knex | null = null;

  constructor(private readonly database: Config['database']) {}

  get knex(): Knex {
    if (!this.db) this.db = acquireDatabase(this.database);
    return this.db;
  }

  async release(): Promise<void> {
    if (!this.db) return;
    this.db = null;
    await releaseDatabase(this.database);
  }
}

export interface ServiceDefinition<S extends ServiceName> {
  actions: ActionTable<S>;
  events?: EventTable;
  /** Released after `stopped()`, when the service owns tables. */
  database?: ServiceDatabase;
  created?(this: Service): void;
  started?(this: Service): void | Promise<void>;
  stopped?(this: Service): void | Promise<void>;
}

/** `defineService('notifier', { database, actions: { webhookSecret: async (ctx) => …, … }, events, created, … })` */
export function defineService<S extends ServiceName>(name: S, def: ServiceDefinition<S>): ServiceSchema {
  const { database, created, started, stopped } = def;
  const table: Record<string, SomeActionDef> = def.actions;
  const actions: ServiceActionsSchema = {};
  for (const [local, action] of Object.entries(table)) actions[local] = action;
  const events: ServiceEvents = {};
  for (const [event, handler] of Object.entries(def.events ?? {})) events[event] = handler;
  return {
    name,
    actions,
    events,
    ...(created ? { created } : {}),
    ...(started ? { started } : {}),
    async stopped(this: Service) {
      try {
        await stopped?.call(this);
      } finally {
        await database?.release();
      }
    },
  };
}
