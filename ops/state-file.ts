/**
 * A small JSON file that one process rewrites while others read it (`npm run stack`'s
 * stack.json, rewritten every second by its supervisor and read by `status`, `admin` and
 * `stop`): written under another name and renamed into place, so a reader finds the old text
 * or the new one, never a file cut short (writeFileSync truncates before it writes).
 */
import fs from 'node:fs';

export function writeStateFile(file: string, value: unknown): void {
  const partial = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(partial, JSON.stringify(value, null, 2));
  fs.renameSync(partial, file);
}
