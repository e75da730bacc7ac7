/**
 * The layering of services/ (README, "Architecture"), read from the import graph of the code
 * itself, type-only imports included:
 * - `services/shared/` is the kernel: it imports only `services/shared/`;
 * - a service imports `services/shared/`, itself, and other services' `public/` folders only
 *   (what one service owns and others call, its owner publishes there);
 * - `runtime/` (the composition root and process plumbing) and `bin/` may import anything;
 *   nothing under services/ imports them;
 * - no import cycle among the modules of services/, type-level included;
 * - inside services/capture/, its rooms (each folder's header says what it owns): the page
 *   imports only the page; fair sharing only itself; the browsers the page and fair sharing;
 *   the jobs the browsers and fair sharing, never the page (they reach it through the engine);
 *   research the jobs and the engine only. The service's wiring (its top-level files) may
 *   import every room.
 * Data files (JSON, such as the Chromium flags grid/ and capture share) are not modules: any
 * code may read them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** Every .ts file under `dir` (relative to the repository), recursively. */
function tsFiles(dir: string): string[] {
  const abs = path.join(ROOT, dir);
  if (!fs.existsSync(abs)) return [];
  return fs.readdirSync(abs, { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(rel);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The repository modules a module imports (relative specifiers only; packages and data files are outside the rule). */
function importsOf(file: string, source = fs.readFileSync(path.join(ROOT, file), 'utf8')): string[] {
  const info = ts.preProcessFile(source, true, true);
  const out: string[] = [];
  for (const { fileName } of info.importedFiles) {
    if (!fileName.startsWith('.') || fileName.endsWith('.json')) continue;
    const base = path.normalize(path.join(path.dirname(file), fileName));
    const found = [`${base}.ts`, path.join(base, 'index.ts'), base].find((c) => fs.existsSync(path.join(ROOT, c)) && c.endsWith('.ts'));
    if (!found) throw new Error(`${file}: cannot resolve "${fileName}"`);
    out.push(found);
  }
  return out;
}

type Place = { kind: 'shared' } | { kind: 'service'; service: string; isPublic: boolean } | { kind: 'runtime' } | { kind: 'bin' } | { kind: 'other' };

function placeOf(file: string): Place {
  const parts = file.split(path.sep);
  if (parts[0] === 'runtime') return { kind: 'runtime' };
  if (parts[0] === 'bin') return { kind: 'bin' };
  if (parts[0] !== 'services' || parts.length < 3) return { kind: 'other' };
  if (parts[1] === 'shared') return { kind: 'shared' };
  return { kind: 'service', service: parts[1] as string, isPublic: parts[2] === 'public' };
}

/** What each room of services/capture/ may import besides itself: rooms, or single modules of one. */
const CAPTURE_ROOMS: Record<string, readonly string[]> = {
  page: [],
  fairness: [],
  browsers: ['page', 'fairness'],
  jobs: ['browsers', 'fairness'],
  research: ['jobs', 'browsers/engine.ts'],
  public: [],
};

/** The room of a module of services/capture/ (its folder), or null for the service's top-level wiring. */
function captureRoomOf(file: string): string | null {
  const parts = file.split(path.sep);
  return parts[0] === 'services' && parts[1] === 'capture' && parts.length > 3 ? (parts[2] as string) : null;
}

/** Why `from` may not import `to` inside services/capture/, or null when it may. */
function roomRefusal(from: string, to: string): string | null {
  const a = captureRoomOf(from);
  const b = captureRoomOf(to);
  if (!from.startsWith(`services${path.sep}capture${path.sep}`) || !to.startsWith(`services${path.sep}capture${path.sep}`)) return null;
  if (a === null || a === b || b === 'public') return null;
  const allowed = CAPTURE_ROOMS[a];
  if (!allowed) return `${from}: services/capture/${a}/ is no room the import rule knows (add it to CAPTURE_ROOMS with what it may import)`;
  const inner = to.split(path.sep).slice(2).join('/');
  if (b !== null && allowed.some((r) => r === b || r === inner)) return null;
  return `${from} imports ${to}: the capture room ${a}/ imports only ${[a, ...allowed].join(', ')} (see its header)`;
}

/** Why `from` may not import `to`, or null when it may. */
function refusal(from: string, to: string): string | null {
  const inRooms = roomRefusal(from, to);
  if (inRooms) return inRooms;
  const a = placeOf(from);
  const b = placeOf(to);
  if (a.kind === 'runtime' || a.kind === 'bin' || a.kind === 'other') return null;
  if (b.kind === 'runtime' || b.kind === 'bin' || b.kind === 'other')
    return `${from} imports ${to}: services/ never imports the runtime, bin/ or files outside services/`;
  if (a.kind === 'shared') return b.kind === 'shared' ? null : `${from} imports ${to}: the kernel (services/shared/) imports only the kernel`;
  if (b.kind === 'shared') return null;
  if (a.kind === 'service' && b.kind === 'service' && (b.service === a.service || b.isPublic)) return null;
  return (
    `${from} imports ${to}: a service imports services/shared/, itself and other services' public/ only (publish it in ` +
    `services/${(b as { service: string }).service}/public/)`
  );
}

/** The cycles of a graph (its strongly connected components of more than one node, or a node importing itself). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, indices.get(w) as number));
    }
    if (low.get(v) === indices.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return cycles;
}

describe('the import graph of services/ (the layering rule)', () => {
  const code = [...tsFiles('services'), ...tsFiles('runtime'), ...tsFiles('bin')];
  const graph = new Map(code.map((f) => [f, importsOf(f)]));

  it('finds the code and its imports (the rule below reads something)', () => {
    expect(code.filter((f) => placeOf(f).kind === 'shared').length).to.be.greaterThan(10);
    expect([...graph.values()].flat().length).to.be.greaterThan(300);
  });

  it("the kernel imports only the kernel; a service imports the kernel, itself and other services' public/ only; capture's rooms import as their headers say", () => {
    const refusals = [...graph].flatMap(([from, tos]) => tos.map((to) => refusal(from, to)).filter((r): r is string => r !== null));
    expect(refusals).to.deep.equal([]);
  });

  it('has no import cycle among the modules of services/, type-only imports included', () => {
    const services = new Map(
      [...graph].filter(([f]) => f.startsWith(`services${path.sep}`)).map(([f, tos]) => [f, tos.filter((t) => t.startsWith(`services${path.sep}`))]),
    );
    expect(cyclesOf(services)).to.deep.equal([]);
  });

  it('the rule and the cycle finder refuse what they should (checked on made-up imports)', () => {
    expect(refusal('services/shared/errors.ts', 'services/billing/public/credits.ts')).to.contain('the kernel');
    expect(refusal('services/api/http.ts', 'services/capture/browsers/engine.ts')).to.contain('publish it in services/capture/public/');
    expect(refusal('services/api/http.ts', 'runtime/system.ts')).to.contain('never imports the runtime');
    expect(refusal('services/api/http.ts', 'services/capture/public/thumbnail-names.ts')).to.equal(null);
    expect(refusal('runtime/system.ts', 'services/capture/capture.service.ts')).to.equal(null);
    const [page, engine, pool, jobs] = ['page/page-capture.ts', 'browsers/engine.ts', 'browsers/browser-pool.ts', 'jobs/jobs.ts'].map((f) =>
      path.join('services', 'capture', ...f.split('/')),
    ) as [string, string, string, string];
    expect(refusal(path.join('services', 'capture', 'jobs', 'files.ts'), page)).to.contain('the capture room jobs/ imports only');
    expect(refusal(path.join('services', 'capture', 'jobs', 'files.ts'), engine)).to.equal(null);
    expect(refusal(page, jobs)).to.contain('the capture room page/ imports only page');
    expect(refusal(path.join('services', 'capture', 'research', 'research.ts'), engine)).to.equal(null);
    expect(refusal(path.join('services', 'capture', 'research', 'research.ts'), pool)).to.contain('research/ imports only');
    expect(refusal(path.join('services', 'capture', 'capture.service.ts'), page)).to.equal(null);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['d']],
          ['e', []],
        ]),
      ),
    ).to.deep.equal([['a', 'b', 'c'], ['d']]);
    expect(
      importsOf('services/x/y.ts', "import type { A } from '../shared/errors';\nexport { B } from './z';".replace('./z', '../shared/config')),
    ).to.deep.equal([path.join('services', 'shared', 'errors.ts'), path.join('services', 'shared', 'config.ts')]);
  });
});
