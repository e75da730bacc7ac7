/**
 * deploy/kubernetes proven without a cluster: rendered by Kustomize (the base, and the large
 * overlay with autoscaling and monitoring), every object validated against the Kubernetes
 * (and KEDA, Prometheus Operator) schemas, the probes pointed at the ports the processes
 * listen on, every Deployment's environment a valid configuration that config.ts reads in
 * full, the termination grace covering the service's own SIGTERM drain, and the egress
 * gateway reachable from the Chrome nodes.
 */
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { brokerOptions } from '../../moleculer.config';
import { captureService } from '../../services/capture/capture.service';
import { DRAIN_CHECK_MS } from '../../services/capture/browsers/grid-drain';
import { ALL_SERVICES, VARIABLE_GROUPS, loadConfig, loadDatabaseConfig } from '../../services/shared/config';
import { DEPLOY, type EnvSource, type K8sObject, ROOT, containerEnv, find, kustomizeVersion, readYaml, render, serviceDeployments } from './render';

/** What validates each kind: the models' own schemas (required fields, types, formats). */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** Stand-ins for what the cluster supplies: the Secret's values and the pod's IP. */
const SECRET_VALUES: Record<string, string> = {
  DATABASE_URL: 'mysql://snap:pw@mysql.internal:3306/snap',
  REDIS_URL: 'redis://redis.internal:6379',
  TRANSPORTER: 'nats://nats.internal:4222',
  SECRETS_KEY: 'ab'.repeat(32),
  METRICS_TOKEN: 'metrics-token-0123456789',
};
const POD_IP = '10.42.7.19';

function plainEnv(env: Map<string, EnvSource>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, s] of env) {
    if ('value' in s) out[k] = s.value;
    else if ('secret' in s) out[k] = SECRET_VALUES[s.secret] ?? '';
    else if (s.field === 'status.podIP') out[k] = POD_IP;
    else throw new Error(`${k} comes from ${s.field}, which this test does not stand in for`);
  }
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: containers as rendered.
const containerOf = (d: K8sObject, name: string): any => d.spec.template.spec.containers.find((c: { name: string }) => c.name === name);
// biome-ignore lint/suspicious/noExplicitAny: a port as rendered.
const portNumber = (c: any, port: string | number): number =>
  typeof port === 'number' ? port : c.ports.find((p: { name: string }) => p.name === port)?.containerPort;

describe('deploy/kubernetes: rendered and checked without a cluster', () => {
  const renderings: Record<string, K8sObject[]> = {};

  before(function () {
    this.timeout(60_000);
    const [major = 0] = kustomizeVersion();
    expect(major, 'kubectl with Kustomize v5 or later renders deploy/kubernetes (kubectl 1.27+)').to.be.at.least(5);
    renderings.base = render('base');
    renderings['overlays/large'] = render('overlays/large');
  });

  for (const dir of ['base', 'overlays/large']) {
    describe(dir, () => {
      const objects = () => renderings[dir] as K8sObject[];

      it('validates every object against its schema', () => {
        expect(objects().length).to.be.greaterThan(10);
        for (const o of objects()) {
          const Model = MODELS[`${o.apiVersion}/${o.kind}`];
          expect(Model, `${o.apiVersion} ${o.kind} ${o.metadata.name}: no schema to check it against`).to.exist;
          expect(() => new (Model as new (d: unknown) => { validate(): void })(o).validate(), `${o.kind} ${o.metadata.name}`).not.to.throw();
        }
      });

      it('runs every service role, each Deployment one role named by SERVICES', () => {
        const roles = serviceDeployments(objects()).map((d) => {
          const env = plainEnv(containerEnv(objects(), containerOf(d, 'snapservice')));
          expect(env.SERVICES, d.metadata.name).to.equal(d.metadata.labels?.['app.kubernetes.io/component']);
          return env.SERVICES;
        });
        expect([...roles].sort()).to.deep.equal([...ALL_SERVICES].sort());
      });

      it('gives every service container an environment config.ts accepts (the migration its database settings), and sets no variable it does not read', () => {
        for (const d of serviceDeployments(objects())) {
          for (const c of [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers ?? [])]) {
            const env = plainEnv(containerEnv(objects(), c));
            const read = new Set<string>();
            const watched = new Proxy(env, {
              get(target, key) {
                if (typeof key === 'string') read.add(key);
                return target[key as string];
              },
            });
            // The migration init container reads the database settings alone (db/migrate.ts).
            const load = c.name === 'migrate' ? loadDatabaseConfig : loadConfig;
            expect(() => load(watched), `${d.metadata.name}/${c.name}`).not.to.throw();
            const unread = Object.keys(env).filter((k) => !read.has(k));
            expect(unread, `${d.metadata.name}/${c.name} sets variables the service never reads`).to.deep.equal([]);
          }
        }
      });

      it("gives every container that receives a group's secret half the rest of the group, from the same shared places", () => {
        // The secret variables the Secret may hold: its keys, and those its comments name (SERVICE_AI_API_KEY, ...).
        const example = fs.readFileSync(path.join(DEPLOY, 'base', 'secret.example.yaml'), 'utf8');
        const documented = new Set([
          ...Object.keys(readYaml<K8sObject>('base/secret.example.yaml').stringData ?? {}),
          ...(example.match(/\b[A-Z][A-Z0-9_]{3,}\b/g) ?? []),
        ]);
        const grouped = VARIABLE_GROUPS.filter((g) => [g.lead, ...g.others].some((v) => documented.has(v)));
        expect(grouped.map((g) => g.lead)).to.include.members(['REAL_LOCATIONS_PROVIDER', 'SERVICE_AI_PROVIDER']);
        const containers = objects()
          .filter((o) => o.kind === 'Deployment')
          .flatMap((d) => [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers ?? [])].map((c) => ({ d, c })));
        for (const { d, c } of containers) {
          const what = `${d.metadata.name}/${c.name}`;
          const fromSecret = (c.envFrom ?? []).some((f: { secretRef?: unknown }) => f.secretRef);
          const fromConfig = (c.envFrom ?? []).some((f: { configMapRef?: { name: string } }) => f.configMapRef?.name.startsWith('snapservice-config'));
          const own = new Set((c.env ?? []).map((e: { name: string }) => e.name));
          for (const g of grouped) {
            const group = [g.lead, ...g.others];
            // Where the operator puts a group: the Secret (its secret half) and the shared ConfigMap, never one Deployment's env.
            expect(
              group.filter((v) => own.has(v)),
              `${what} sets part of ${g.lead}'s group in its own env`,
            ).to.deep.equal([]);
            // A container given the whole Secret gets the ConfigMap with the rest of every group.
            if (fromSecret) expect(fromConfig, `${what} gets the Secret (${g.lead}'s secret half) without snapservice-config`).to.equal(true);
          }
        }
        // And what the ConfigMap holds of a group it holds whole, less the Secret's part.
        // (Kustomize names the generated ConfigMap snapservice-config-<hash>.)
        const config = objects().find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('snapservice-config'))?.data ?? {};
        const secretKeys = Object.keys(readYaml<K8sObject>('base/secret.example.yaml').stringData ?? {});
        for (const g of VARIABLE_GROUPS) {
          const group = [g.lead, ...g.others];
          if (!group.some((v) => v in config)) continue;
          expect(
            group.filter((v) => !(v in config) && !secretKeys.includes(v)),
            `${g.lead}'s group: in config.env or the Secret`,
          ).to.deep.equal([]);
        }
      });

      it('points readiness at /health on the port the process serves it on, and liveness never at /health', () => {
        for (const d of serviceDeployments(objects())) {
          const c = containerOf(d, 'snapservice');
          const config = loadConfig(plainEnv(containerEnv(objects(), c)));
          // The api serves /health on PORT; every other process on its OPS_PORT.
          const port = config.services.includes('api') ? config.port : config.opsPort;
          expect(port, `${d.metadata.name}: a port that serves /health`).to.be.a('number');
          expect(c.readinessProbe?.httpGet?.path, d.metadata.name).to.equal('/health');
          expect(portNumber(c, c.readinessProbe.httpGet.port), d.metadata.name).to.equal(port);
          // Liveness: the process answers on its port. /health would restart a capture
          // instance that waits for Grid slots, and the api whenever no capture node is up.
          expect(c.livenessProbe?.httpGet, `${d.metadata.name}: liveness on /health`).to.equal(undefined);
          expect(portNumber(c, c.livenessProbe?.tcpSocket?.port), d.metadata.name).to.equal(port);
          expect(portNumber(c, c.startupProbe?.tcpSocket?.port), d.metadata.name).to.equal(port);
        }
        const node = containerOf(find(objects(), 'Deployment', 'chrome-node'), 'chrome-node');
        expect(portNumber(node, node.livenessProbe.tcpSocket.port)).to.equal(5555);
      });

      it('lets each service drain on SIGTERM before Kubernetes kills it', () => {
        for (const d of serviceDeployments(objects())) {
          const c = containerOf(d, 'snapservice');
          const config = loadConfig(plainEnv(containerEnv(objects(), c)));
          const waitMs = brokerOptions(config).tracking?.shutdownTimeout ?? 0;
          const preStopS = Number(c.lifecycle?.preStop?.exec?.command?.[0] === 'sleep' ? c.lifecycle.preStop.exec.command[1] : 0);
          // The broker waits for the calls this process made, then for the calls made to it.
          let drainMs = 2 * waitMs;
          // A capture instance then gives its running jobs CAPTURE_TIMEOUT_MS before it quits the browsers.
          if (config.services.includes('capture')) drainMs += config.capture.timeoutMs;
          // The api answers every request in flight: a /snap may wait for capture.take's whole timeout.
          const take = captureService({ config }).schema.actions?.take as { timeout?: number } | undefined;
          if (config.services.includes('api')) drainMs = waitMs + (take?.timeout ?? Number.NaN);
          const grace = d.spec.template.spec.terminationGracePeriodSeconds;
          expect(grace, `${d.metadata.name}: terminationGracePeriodSeconds`).to.be.at.least(preStopS + drainMs / 1000 + 10);
        }
      });

      it('gives a draining Chrome node the time for its browsers to move off it between captures', () => {
        // preStop drains the node; the capture instances see it within DRAIN_CHECK_MS and move
        // each browser after its capture, which CAPTURE_TIMEOUT_MS bounds (grid-drain.ts).
        const capture = loadConfig(plainEnv(containerEnv(objects(), containerOf(find(objects(), 'Deployment', 'capture'), 'snapservice'))));
        const node = find(objects(), 'Deployment', 'chrome-node');
        const command = containerOf(node, 'chrome-node').lifecycle?.preStop?.exec?.command?.join(' ') ?? '';
        expect(command).to.contain('/se/grid/node/drain');
        expect(node.spec.template.spec.terminationGracePeriodSeconds).to.be.at.least(DRAIN_CHECK_MS / 1000 + capture.capture.timeoutMs / 1000 + 10);
      });

      it("has the Chrome nodes reach each capture pod's egress gateways at the pod's IP", () => {
        const capture = find(objects(), 'Deployment', 'capture');
        const env = plainEnv(containerEnv(objects(), containerOf(capture, 'snapservice')));
        const gateway = loadConfig(env).capture.gateway;
        expect(gateway, 'the gateway runs').to.not.equal(null);
        expect(gateway?.bindHost).to.equal('0.0.0.0');
        expect(gateway?.advertisedHost, 'the address the browsers are given').to.equal(POD_IP);
        // The node's egress policy lets it reach capture pods, on any port (gateway ports are chosen at start).
        const policy = find(objects(), 'NetworkPolicy', 'chrome-node-egress');
        const nodeLabels = find(objects(), 'Deployment', 'chrome-node').spec.template.metadata.labels;
        expect(Object.entries(policy.spec.podSelector.matchLabels).every(([k, v]) => nodeLabels[k] === v)).to.equal(true);
        const captureLabels = capture.spec.template.metadata.labels;
        const toCapture = policy.spec.egress.find((r: { to?: Array<{ podSelector?: { matchLabels: Record<string, string> } }>; ports?: unknown }) =>
          r.to?.some((t) => t.podSelector && Object.entries(t.podSelector.matchLabels).every(([k, v]) => captureLabels[k] === v)),
        );
        expect(toCapture, 'an egress rule to the capture pods').to.exist;
        expect(toCapture.ports, 'every port').to.equal(undefined);
        // And only the Chrome nodes reach the capture pods' gateways (any port); anyone else only the ops port.
        const ingress = find(objects(), 'NetworkPolicy', 'capture-ingress');
        expect(Object.entries(ingress.spec.podSelector.matchLabels).every(([k, v]) => captureLabels[k] === v)).to.equal(true);
        expect(ingress.spec.policyTypes).to.deep.equal(['Ingress']);
        type Rule = { from?: Array<{ podSelector?: { matchLabels: Record<string, string> } }>; ports?: Array<{ port: number }> };
        const rules = ingress.spec.ingress as Rule[];
        const everyPort = rules.filter((r) => r.ports === undefined);
        expect(everyPort, 'one rule open on every port').to.have.length(1);
        expect(everyPort[0]?.from?.map((f) => f.podSelector?.matchLabels)).to.deep.equal([
          { 'app.kubernetes.io/name': 'selenium', 'app.kubernetes.io/component': 'chrome-node' },
        ]);
        const opsPort = Number(plainEnv(containerEnv(objects(), containerOf(capture, 'snapservice'))).OPS_PORT);
        expect(rules.filter((r) => r.ports !== undefined).map((r) => [r.from, r.ports?.map((p) => p.port)])).to.deep.equal([[undefined, [opsPort]]]);
      });

      it("stores files in one bucket every pod shares: STORAGE_URL set, never a pod's own disk", () => {
        for (const d of serviceDeployments(objects())) {
          const config = loadConfig(plainEnv(containerEnv(objects(), containerOf(d, 'snapservice'))));
          expect(config.storageUrl, `${d.metadata.name}: STORAGE_URL`).to.match(/^gs:\/\/[^/]+/);
        }
      });

      it("starts the Chrome nodes with --grid-url set to the hub's Service, so se:cdp points at the hub", () => {
        // The node image (grid/Dockerfile.node) passes --grid-url "$VAR"; the Deployment sets VAR.
        const dockerfile = fs.readFileSync(path.join(ROOT, 'grid', 'Dockerfile.node'), 'utf8');
        const cmd = dockerfile.split('\n').find((l) => l.startsWith('CMD ')) ?? '';
        const variable = /--grid-url \\"\$(\w+)\\"/.exec(cmd)?.[1];
        expect(variable, 'the node command passes --grid-url "$VAR"').to.be.a('string');
        const node = containerOf(find(objects(), 'Deployment', 'chrome-node'), 'chrome-node');
        const gridUrl = plainEnv(containerEnv(objects(), node))[variable as string];
        const hub = find(objects(), 'Service', 'selenium-hub');
        const port = hub.spec.ports.find((p: { name: string }) => p.name === 'http')?.port;
        expect(gridUrl, `chrome-node: ${variable}`).to.equal(`http://${hub.metadata.name}:${port}`);
        // The same hub the services use.
        const capture = plainEnv(containerEnv(objects(), containerOf(find(objects(), 'Deployment', 'capture'), 'snapservice')));
        expect(gridUrl).to.equal(capture.SELENIUM_URL);
      });

      it('has every PodDisruptionBudget select the pods of one Deployment', () => {
        const deployments = objects().filter((o) => o.kind === 'Deployment');
        for (const pdb of objects().filter((o) => o.kind === 'PodDisruptionBudget')) {
          const selected = deployments.filter((d) => Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => d.spec.template.metadata.labels[k] === v));
          expect(
            selected.map((d) => d.metadata.name),
            pdb.metadata.name,
          ).to.deep.equal([pdb.metadata.name]);
          expect(pdb.spec.maxUnavailable, pdb.metadata.name).to.equal(1);
        }
      });
    });
  }

  it('scales what exists, with thresholds that match the Deployments (large overlay)', () => {
    const objects = renderings['overlays/large'] as K8sObject[];
    const scaled = objects.filter((o) => o.kind === 'ScaledObject');
    expect(scaled.map((s) => s.metadata.name).sort()).to.deep.equal(['capture', 'chrome-node']);
    for (const s of scaled) {
      const target = find(objects, 'Deployment', s.spec.scaleTargetRef.name);
      expect(target.spec.replicas, `${target.metadata.name}: KEDA owns its replicas`).to.equal(undefined);
      expect(s.spec.minReplicaCount).to.be.at.least(2);
      expect(s.spec.maxReplicaCount).to.be.greaterThan(s.spec.minReplicaCount);
    }
    const sessions = Number(plainEnv(containerEnv(objects, containerOf(find(objects, 'Deployment', 'capture'), 'snapservice'))).CAPTURE_SESSIONS);
    const captureTrigger = find(objects, 'ScaledObject', 'capture').spec.triggers[0];
    expect(Number(captureTrigger.metadata.threshold), 'captures in flight per instance, at most its sessions').to.be.within(sessions / 2, sessions);
    const nodeEnv = plainEnv(containerEnv(objects, containerOf(find(objects, 'Deployment', 'chrome-node'), 'chrome-node')));
    const [byMetric, byGrid] = find(objects, 'ScaledObject', 'chrome-node').spec.triggers;
    expect(Number(byMetric.metadata.threshold), 'sessions per node').to.equal(Number(nodeEnv.NODE_MAX_SESSIONS));
    expect(byGrid.type).to.equal('selenium-grid');
    expect(Number(byGrid.metadata.nodeMaxSessions)).to.equal(Number(nodeEnv.NODE_MAX_SESSIONS));
    const selenium = plainEnv(containerEnv(objects, containerOf(find(objects, 'Deployment', 'capture'), 'snapservice'))).SELENIUM_URL;
    expect(byGrid.metadata.url).to.equal(`${selenium}/graphql`);
    // The Grid must offer every capture instance its sessions: the headroom trigger's nodes at maximum.
    const captureMax = find(objects, 'ScaledObject', 'capture').spec.maxReplicaCount;
    expect(find(objects, 'ScaledObject', 'chrome-node').spec.maxReplicaCount * Number(nodeEnv.NODE_MAX_SESSIONS)).to.be.at.least((captureMax + 1) * sessions);
  });

  it('keeps secrets out of every ConfigMap', () => {
    for (const objects of Object.values(renderings)) {
      for (const cm of objects.filter((o) => o.kind === 'ConfigMap')) {
        for (const key of Object.keys(readYaml<K8sObject>('base/secret.example.yaml').stringData ?? {}))
          expect(cm.data ?? {}, cm.metadata.name).not.to.have.property(key);
      }
    }
  });
});
