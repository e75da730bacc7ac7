/**
 * docker-compose.yml and deploy/kubernetes run the same system: every service role, the
 * migration step, the hub and the Chrome nodes get the same variables in both, with the
 * same values wherever compose fixes a value (a `${...}` compose leaves to the operator, and
 * a Secret's value, are compared by name). The one variable only the cluster needs is
 * listed below with its reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { ALL_SERVICES } from '../../services/shared/config';
import { type EnvSource, type K8sObject, ROOT, containerEnv, find, render } from './render';

/** Variables the cluster sets and compose does not, and why. */
const CLUSTER_ONLY: Record<string, Record<string, string>> = {
  capture: {
    // Docker resolves a container's host name (compose's default, os.hostname()); a pod's
    // name does not resolve in a cluster, so the Chrome nodes get the pod's IP.
    EGRESS_GATEWAY_HOST: 'the pod IP, for the Chrome nodes to reach the egress gateways',
  },
};

type ComposeService = { environment?: Record<string, string | null> };

function composeEnv(service: ComposeService): Map<string, string> {
  return new Map(Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

/** compose's value and the cluster's agree: by name for what the operator or the Secret supplies, else exactly. */
function compare(what: string, compose: Map<string, string>, cluster: Map<string, EnvSource>, clusterOnly: Record<string, string> = {}): void {
  const missing = [...compose.keys()].filter((k) => !cluster.has(k));
  expect(missing, `${what}: set by docker-compose.yml, not by the cluster`).to.deep.equal([]);
  const extra = [...cluster.keys()].filter((k) => !compose.has(k) && !(k in clusterOnly));
  expect(extra, `${what}: set by the cluster, not by docker-compose.yml`).to.deep.equal([]);
  for (const [name, value] of compose) {
    const source = cluster.get(name) as EnvSource;
    if (value.includes('${') || 'secret' in source) continue;
    expect('value' in source ? source.value : source, `${what}: ${name}`).to.equal(value);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: containers as rendered.
const container = (d: K8sObject, name: string): any =>
  [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers ?? [])].find((c: { name: string }) => c.name === name);

describe('docker-compose.yml and deploy/kubernetes agree on every variable', () => {
  const compose = YAML.parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
  let objects: K8sObject[];
  before(function () {
    this.timeout(30_000);
    objects = render('base');
  });

  for (const role of ALL_SERVICES) {
    it(`the ${role} role`, () => {
      const d = find(objects, 'Deployment', role);
      compare(role, composeEnv(compose.services[role] as ComposeService), containerEnv(objects, container(d, 'snapservice')), CLUSTER_ONLY[role]);
    });
  }

  it('the migration step (an init container of every service pod)', () => {
    const migrate = composeEnv(compose.services.migrate as ComposeService);
    for (const role of ALL_SERVICES) {
      const init = container(find(objects, 'Deployment', role), 'migrate');
      expect(init?.command, role).to.deep.equal((compose.services.migrate as { command: string[] }).command);
      // DATABASE_URL alone (from the Secret), the one variable it reads.
      compare(`${role}/migrate`, migrate, containerEnv(objects, init));
    }
  });

  it('the Selenium hub and the Chrome nodes, with the same images', () => {
    const hub = find(objects, 'Deployment', 'selenium-hub');
    compare('selenium-hub', composeEnv(compose.services['selenium-hub'] as ComposeService), containerEnv(objects, container(hub, 'hub')));
    expect(container(hub, 'hub').image).to.equal((compose.services['selenium-hub'] as { image: string }).image);
    const node = find(objects, 'Deployment', 'chrome-node');
    compare('chrome', composeEnv(compose.services.chrome as ComposeService), containerEnv(objects, container(node, 'chrome-node')));
    expect(container(node, 'chrome-node').image).to.equal((compose.services.chrome as { image: string }).image);
    for (const role of ALL_SERVICES)
      expect(container(find(objects, 'Deployment', role), 'snapservice').image, role).to.equal((compose.services[role] as { image: string }).image);
  });
});
