/**
 * What watches and scales the cluster reads only what the service exports: the alert rules
 * (unit-tested with promtool, the PrometheusRule equal to the plain rules file), the KEDA
 * queries and the Grafana dashboard's queries are valid PromQL (promtool checks them as
 * rules), and every snap_* name in them is a metric family of a real /metrics scrape of the
 * running service (capture, notifier and ai included), itself clean by `promtool check metrics`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { backendConfig } from '../support/backends';
import { sharedGrid } from '../support/grid';
import { scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';
import { DEPLOY, type K8sObject, readYaml, render } from './render';

const MONITORING = path.join(DEPLOY, 'components', 'monitoring');

function promtool(args: string[], input?: string): { status: number | null; out: string } {
  const res = spawnSync('promtool', args, { cwd: MONITORING, encoding: 'utf8', input });
  if (res.error) throw new Error(`promtool (Debian package prometheus; npm test's setup installs it) could not run: ${res.error.message}`);
  return { status: res.status, out: `${res.stdout}${res.stderr}` };
}

/** Every PromQL expression the deployment evaluates: alert rules, KEDA's queries, the dashboard's panels. */
function expressions(objects: K8sObject[]): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  const rules = readYaml<{ groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }>('components/monitoring/prometheus-rules.yaml');
  for (const g of rules.groups) for (const r of g.rules) out.push({ where: `alert ${r.alert}`, expr: r.expr });
  for (const s of objects.filter((o) => o.kind === 'ScaledObject')) {
    for (const t of s.spec.triggers) if (t.type === 'prometheus') out.push({ where: `ScaledObject ${s.metadata.name}`, expr: t.metadata.query });
  }
  const dashboard = JSON.parse(fs.readFileSync(path.join(MONITORING, 'snapservice-dashboard.json'), 'utf8')) as {
    panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    templating: { list: Array<{ definition?: string }> };
  };
  for (const p of dashboard.panels) for (const t of p.targets) out.push({ where: `panel "${p.title}"`, expr: t.expr.replaceAll('$namespace', 'snapservice') });
  return out;
}

describe('alerts, autoscaling queries and the dashboard read what the service exports', function () {
  this.timeout(120_000);
  let objects: K8sObject[];
  before(() => {
    objects = render('overlays/large');
  });

  it('has the PrometheusRule carry exactly the groups of the plain rules file', () => {
    const rule = objects.find((o) => o.kind === 'PrometheusRule') as K8sObject;
    expect(rule.spec.groups).to.deep.equal(readYaml<{ groups: unknown }>('components/monitoring/prometheus-rules.yaml').groups);
  });

  it('passes its alert rules unit tests (promtool test rules)', () => {
    const res = promtool(['test', 'rules', 'prometheus-rules.test.yaml']);
    expect(res.status, res.out).to.equal(0);
    expect(res.out).to.include('SUCCESS');
  });

  it('writes every query in valid PromQL (promtool check rules)', () => {
    const list = expressions(objects);
    expect(list.length).to.be.greaterThan(15);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'snap-promql-')), 'queries.yaml');
    try {
      const rules = list.map((q, i) => ({ record: `snapservice:query_${i}`, expr: q.expr }));
      fs.writeFileSync(file, YAML.stringify({ groups: [{ name: 'queries', rules }] }));
      const res = promtool(['check', 'rules', file]);
      expect(res.status, res.out).to.equal(0);
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  });

  describe('against a real scrape', () => {
    let system: RunningSystem;
    let cleanup: () => Promise<void>;
    let text: string;
    before(async () => {
      const grid = await sharedGrid();
      const b = await backendConfig('sqlite', { SELENIUM_URL: grid.url, CAPTURE_SESSIONS: '1' });
      cleanup = b.cleanup;
      system = await runSystem(b.config);
      const res = await fetch(`${system.base}/metrics`);
      text = await res.text();
    });
    after(async () => {
      await system?.stop();
      await cleanup?.();
    });

    it('uses only metric names the service exports', async () => {
      const families = (await scrape(system.base)).types;
      const exported = (name: string): boolean => {
        if (families.has(name)) return true;
        const base = name.replace(/_(bucket|sum|count)$/, '');
        return base !== name && families.get(base) === 'histogram';
      };
      expect(families.size).to.be.greaterThan(10);
      const unknown: string[] = [];
      for (const { where, expr } of expressions(objects)) {
        const names = expr.match(/\bsnap_[a-zA-Z0-9_]+/g) ?? [];
        expect(names.length, `${where} reads no snap_ metric`).to.be.greaterThan(0);
        for (const n of names) if (!exported(n)) unknown.push(`${where}: ${n}`);
      }
      expect(unknown, 'names no /metrics scrape has').to.deep.equal([]);
    });

    it('exports metrics promtool finds clean (promtool check metrics)', () => {
      const res = promtool(['check', 'metrics'], text);
      expect(res.status, res.out).to.equal(0);
    });
  });
});
