/**
 * scheduler: owns screenshot_configs. Today it gives every snap its unscheduled
 * configuration (one per account, URL and capture-affecting options, DESIGN section 3);
 * configuration endpoints and schedules arrive with the configurations issue.
 */
import type { Knex } from 'knex';
import type { ServiceSchema } from 'moleculer';
import type { Config } from '../shared/config';
import type { Handler } from '../shared/contracts';
import { acquireDatabase, isUniqueViolation, releaseDatabase } from '../shared/database';
import { randomId } from '../shared/secrets';

export function embedUrl(config: Readonly<Config>, configId: string): string {
  return `${config.appUrl}/embed/${configId}`;
}

export function schedulerService(deps: { config: Readonly<Config> }): ServiceSchema {
  const { config } = deps;
  let db: Knex;

  const snapConfig: Handler<'scheduler.snapConfig'> = async (ctx) => {
    const { accountId, options, snapKey } = ctx.params;
    const find = () => db('screenshot_configs').where({ account_id: accountId, snap_key: snapKey }).first('id');
    let row = await find();
    if (!row) {
      const id = randomId(12);
      try {
        await db('screenshot_configs').insert({
          id,
          account_id: accountId,
          url: options.url,
          options: JSON.stringify(options),
          snap_key: snapKey,
          scheduled: false,
          created_at_ms: Date.now(),
        });
        row = { id };
      } catch (err) {
        // Two snaps of the same page at once: the other one created it.
        if (!isUniqueViolation(err)) throw err;
        row = await find();
      }
    }
    return { id: String(row.id), embed_url: embedUrl(config, String(row.id)) };
  };

  return {
    name: 'scheduler',
    actions: { snapConfig: { handler: snapConfig } },
    created() {
      db = acquireDatabase(config.database);
    },
    async stopped() {
      await releaseDatabase(config.database);
    },
  };
}
