/**
 * A parser of Prometheus' text exposition format (version 0.0.4), for tests that read
 * GET /metrics: every sample with its name, labels and value, and each family's TYPE and
 * HELP. Strict: a line it cannot read throws, so a malformed exposition fails the test.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  types: Map<string, string>;
  help: Map<string, string>;
  /**
   * The value of the one sample named `name` whose labels are exactly `labels`; undefined
   * when there is none (throws if the exposition has it twice).
   */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** The samples named `name` whose labels include `labels`. */
  all(name: string, labels?: Record<string, string>): Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  if (!/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`not a sample value: "${text}" in line: ${line}`);
  return Number(text);
}

/** Reads `{a="x",b="y\"z"}` from `s` at index i (at the `{`); returns the labels and the index after `}`. */
function parseLabels(s: string, start: number, line: string): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    if (s[i] === '}') return [labels, i + 1];
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels in line: ${line}`);
    const name = s.slice(i, eq).trim();
    if (!NAME.test(name) || s[eq + 1] !== '"') throw new Error(`bad label "${name}" in line: ${line}`);
    let j = eq + 2;
    let value = '';
    for (;;) {
      const c = s[j];
      if (c === undefined) throw new Error(`unterminated label value in line: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const n = s[j + 1];
        value += n === 'n' ? '\n' : n === '\\' ? '\\' : n === '"' ? '"' : `\\${n ?? ''}`;
        j += 2;
        continue;
      }
      value += c;
      j++;
    }
    if (name in labels) throw new Error(`label ${name} twice in line: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (s[i] === ',') i++;
    else if (s[i] !== '}') throw new Error(`expected , or } in line: ${line}`);
  }
}

const sameLabels = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v);

export function parsePrometheus(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`bad metric name in line: ${line}`);
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`bad TYPE in line: ${line}`);
        if (types.has(name)) throw new Error(`TYPE of ${name} given twice`);
        types.set(name, rest);
      } else help.set(name, rest);
      continue;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`bad sample line: ${line}`);
    const name = line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`bad metric name in line: ${line}`);
    let labels: Record<string, string> = {};
    let rest = line.slice(nameEnd);
    if (rest.startsWith('{')) {
      const [l, after] = parseLabels(line, nameEnd, line);
      labels = l;
      rest = line.slice(after);
    }
    const parts = rest.trim().split(/\s+/);
    if (parts.length < 1 || parts.length > 2 || !parts[0]) throw new Error(`bad sample line: ${line}`);
    samples.push({ name, labels, value: parseValue(parts[0], line) });
  }
  return {
    samples,
    types,
    help,
    value(name, labels = {}) {
      const found = samples.filter((s) => s.name === name && sameLabels(s.labels, labels));
      if (found.length > 1) throw new Error(`${name}${JSON.stringify(labels)} appears ${found.length} times`);
      return found[0]?.value;
    },
    all(name, labels = {}) {
      return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    },
  };
}

/** GET /metrics, checked to be Prometheus text, parsed. */
export async function scrape(base: string, headers: Record<string, string> = {}): Promise<Exposition> {
  const res = await fetch(`${base}/metrics`, { headers });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 300)}`);
  const type = res.headers.get('content-type');
  if (type !== 'text/plain; version=0.0.4; charset=utf-8') throw new Error(`GET /metrics answered content-type ${type}`);
  return parsePrometheus(text);
}
