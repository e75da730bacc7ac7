/**
 * The Kubernetes manifests (deploy/kubernetes) as `kubectl kustomize` renders them, for
 * the tests that prove them without a cluster. kubectl ships Kustomize; v5 is needed (the
 * components and label selectors the manifests use).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export const ROOT = path.resolve(__dirname, '..', '..', '..');
export const DEPLOY = path.join(ROOT, 'deploy', 'kubernetes');

/** One rendered object: enough structure for the tests, the rest read as plain data. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are plain data; each test reads the fields it checks.
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** `kubectl kustomize <dir>` (a directory under deploy/kubernetes), parsed. */
export function render(dir: string): K8sObject[] {
  const res = spawnSync('kubectl', ['kustomize', path.join(DEPLOY, dir)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (res.error) throw new Error(`kubectl is needed to render deploy/kubernetes (it ships Kustomize): ${res.error.message}`);
  if (res.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${res.stderr}`);
  return YAML.parseAllDocuments(res.stdout).map((d) => d.toJS() as K8sObject);
}

/** The Kustomize version kubectl carries, e.g. [5, 5, 0]. */
export function kustomizeVersion(): number[] {
  const res = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  const m = /Kustomize Version: v(\d+)\.(\d+)\.(\d+)/.exec(res.stdout ?? '');
  return m ? m.slice(1).map(Number) : [];
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendering`);
  return found;
}

/** A YAML file of deploy/kubernetes, parsed. */
export function readYaml<T = unknown>(file: string): T {
  return YAML.parse(fs.readFileSync(path.join(DEPLOY, file), 'utf8')) as T;
}

/** What a rendered container's environment holds: a value, or where the value comes from. */
export type EnvSource = { value: string } | { secret: string } | { field: string };

/**
 * The variables a container gets, as Kubernetes assembles them: envFrom first (ConfigMaps
 * with their data; Secrets with the keys of base/secret.example.yaml, the Secret an operator
 * creates), then env, which wins.
 */
// biome-ignore lint/suspicious/noExplicitAny: a container as rendered.
export function containerEnv(objects: K8sObject[], container: any): Map<string, EnvSource> {
  const env = new Map<string, EnvSource>();
  const secretKeys = Object.keys(readYaml<K8sObject>('base/secret.example.yaml').stringData ?? {});
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) for (const [k, v] of Object.entries(find(objects, 'ConfigMap', from.configMapRef.name).data ?? {})) env.set(k, { value: v });
    if (from.secretRef) {
      if (from.secretRef.name !== 'snapservice-secrets') throw new Error(`unknown Secret ${from.secretRef.name}`);
      for (const k of secretKeys) env.set(k, { secret: k });
    }
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom?.fieldRef) env.set(e.name, { field: e.valueFrom.fieldRef.fieldPath });
    else if (e.valueFrom?.secretKeyRef) env.set(e.name, { secret: e.valueFrom.secretKeyRef.key });
    else env.set(e.name, { value: e.value ?? '' });
  }
  return env;
}

/** The service Deployments (one per role): every Deployment labelled app.kubernetes.io/name=snapservice. */
export function serviceDeployments(objects: K8sObject[]): K8sObject[] {
  return objects.filter((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/name'] === 'snapservice');
}
