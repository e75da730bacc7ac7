/**
 * What a set of processes costs, read from /proc: the CPU time and resident memory of process
 * trees (a ChromeDriver with its browser and renderers, the service's process with its
 * children). Linux only; elsewhere every figure is 0.
 */
import fs from 'node:fs';

const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

export interface Proc {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime, ms. */
  ownMs: number;
  /** cutime + cstime: children that exited and were waited for, ms. */
  childrenMs: number;
  /** Resident set size, bytes. */
  rssBytes: number;
}

/** Every process now, by pid. */
export function processes(): Map<number, Proc> {
  const out = new Map<number, Proc>();
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone
    }
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const f = text.slice(close + 2).split(' ');
    // After "(comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    // priority nice num_threads itrealvalue starttime vsize rss ...
    const t = (i: number) => (Number(f[i]) * 1000) / CLOCK_TICKS_PER_SECOND;
    out.set(Number(name), {
      pid: Number(name),
      ppid: Number(f[1]),
      comm,
      ownMs: t(11) + t(12),
      childrenMs: t(13) + t(14),
      rssBytes: Number(f[21]) * PAGE_BYTES,
    });
  }
  return out;
}

/** Each process's children, by parent pid. */
export function childrenOf(procs: Map<number, Proc>): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const p of procs.values()) {
    const list = children.get(p.ppid) ?? [];
    list.push(p.pid);
    children.set(p.ppid, list);
  }
  return children;
}

/** `root` and every process under it. */
export function tree(procs: Map<number, Proc>, root: number, children = childrenOf(procs)): Proc[] {
  const out: Proc[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    const p = procs.get(pid);
    if (!p) continue;
    out.push(p);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** The processes named `comm` under `root` (e.g. the chromedrivers a Grid or a service started). */
export function descendantsNamed(procs: Map<number, Proc>, root: number, comm: string): number[] {
  return tree(procs, root)
    .filter((p) => p.pid !== root && p.comm === comm)
    .map((p) => p.pid);
}

/** What some process trees use now: CPU so far (their own time plus their reaped children's) and resident memory. */
export interface TreeUse {
  cpuMs: number;
  rssBytes: number;
}

/**
 * CPU so far and RSS now of the trees under `roots`, each process once (a root inside another's
 * tree is not counted twice); `exclude`: subtrees left out (e.g. the page server, a child of
 * the bench's process). A renderer that ended is counted once its browser has reaped it.
 */
export function treesUse(roots: readonly number[], exclude: readonly number[] = [], procs = processes()): TreeUse {
  let cpuMs = 0;
  let rssBytes = 0;
  for (const p of eachOnce(procs, roots, exclude)) {
    cpuMs += p.ownMs + p.childrenMs;
    rssBytes += p.rssBytes;
  }
  return { cpuMs, rssBytes };
}

/** Each process of the trees under `roots` once (a root inside another's tree is not met twice), less the subtrees of `exclude`. */
function* eachOnce(procs: Map<number, Proc>, roots: readonly number[], exclude: readonly number[] = []): Generator<Proc> {
  const children = childrenOf(procs);
  const skip = new Set<number>();
  for (const pid of exclude) for (const p of tree(procs, pid, children)) skip.add(p.pid);
  const seen = new Set<number>();
  for (const root of roots) {
    for (const p of tree(procs, root, children)) {
      if (seen.has(p.pid) || skip.has(p.pid)) continue;
      seen.add(p.pid);
      yield p;
    }
  }
}

/** Busy CPU time of the whole machine so far, ms (from /proc/stat; 0 where there is none). */
export function machineCpuMs(): number {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
    const busy = fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + (fields[7] ?? 0);
    return (busy * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** What a process of a browser's tree does, from its command line: Chromium names it with --type. */
export const BROWSER_PROCESS_KINDS = ['browser', 'renderers', 'gpu', 'network', 'other'] as const;
export type BrowserProcessKind = (typeof BROWSER_PROCESS_KINDS)[number];

/**
 * A process's kind: the browser process (Chromium without --type), its renderers (and the
 * zygote, which reaps the renderers that ended: their CPU is in its children's), the GPU
 * process, the network service, or other (ChromeDriver, other utilities).
 */
export function browserProcessKind(pid: number): BrowserProcessKind {
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return 'other';
  }
  const type = /--type=([a-z-]+)/.exec(cmdline)?.[1];
  if (!type) return /chromedriver/.test(cmdline.split('\0', 1)[0] ?? '') ? 'other' : 'browser';
  if (type === 'renderer' || type === 'zygote') return 'renderers';
  if (type === 'gpu-process') return 'gpu';
  if (type === 'utility' && /--utility-sub-type=network\./.test(cmdline)) return 'network';
  return 'other';
}

/** No CPU of any kind (a count's start). */
export function noUseByKind(): Record<BrowserProcessKind, number> {
  return Object.fromEntries(BROWSER_PROCESS_KINDS.map((k) => [k, 0])) as Record<BrowserProcessKind, number>;
}

/** CPU so far of the trees under `roots` by kind of process, each process once (as treesUse). */
export function treesUseByKind(roots: readonly number[], procs = processes()): Record<BrowserProcessKind, number> {
  const out = noUseByKind();
  for (const p of eachOnce(procs, roots)) out[browserProcessKind(p.pid)] += p.ownMs + p.childrenMs;
  return out;
}
