/** `npm run migrate`: the one-shot migration step of the full stack (and of docker-compose). */
import { loadConfig } from '../services/shared/config';
import { migrateLatest } from '../services/shared/database';

migrateLatest(loadConfig().database)
  .then((applied) => {
    console.log(applied.length ? `Applied migrations: ${applied.join(', ')}` : 'Database is up to date.');
  })
  .catch((err) => {
    console.error('Migration failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
