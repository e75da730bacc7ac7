/**
 * A small JSON file that one process rewrites while others read it (`npm run stack`'s
 * stack.json, rewritten every second by its supervisor and read by `status`, `admin` and
 * `stop`): written under another name and renamed into place, so a reader finds the old text
 * or the new one, never a file cut short (writeFileSync truncates before it writes). It holds
 * the run's SECRETS_KEY and DATABASE_URL (a password too, if the URL has one), so only its
 * owner may read it: mode 0600, whatever the umask and whatever file it replaces.
 */
import fs from 'node:fs';

export function writeStateFile(file: string, value: unknown): void {
  const partial = `${file}.${process.pid}.tmp`;
  // A partial file a killed writer of the same pid left could have another mode: made anew.
  fs.rmSync(partial, { force: true });
  fs.writeFileSync(partial, JSON.stringify(value, null, 2), { mode: 0o600 });
  fs.renameSync(partial, file);
}
