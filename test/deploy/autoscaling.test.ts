/**
 * The capture instances' autoscaling rule (the large overlay's KEDA ScaledObject) played
 * over a queue-depth series, with the Horizontal Pod Autoscaler's algorithm as Kubernetes
 * documents it: every polling interval the desired count is ceil(metric / threshold) for an
 * AverageValue metric (kept when within the 10% tolerance), bounded by min and max; a
 * scale-up may add at most what its policy allows per period; a scale-down takes the highest
 * desired count of its stabilization window and removes at most its policy's pods per period.
 * The series: captures in flight (busy + waiting + queued jobs) of a burst, a steady stretch
 * and a drain, recorded from the service (bench/demand-record.ts). The numbers come from the
 * rendered manifest and the recording, not from here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { type K8sObject, find, render } from './render';

interface Policy {
  type: 'Pods' | 'Percent';
  value: number;
  periodSeconds: number;
}
interface Rules {
  stabilizationWindowSeconds: number;
  policies: Policy[];
}

/**
 * Captures in flight as the scaler's query reads them, recorded from the service under load
 * by bench/demand-record.ts (2 callers, a burst of 28, 14 steady, then none; one sample a
 * second, played here as one poll each).
 */
interface Recording {
  phases: Record<'quiet' | 'burst' | 'steady' | 'drain', { from: number; to: number; callers: number }>;
  samples: number[];
}
const recording = (): Recording =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'deploy', 'capture-demand.recorded.json'), 'utf8')) as Recording;

/** Replicas after each poll. */
function simulate(so: K8sObject, metric: number[]): number[] {
  const { minReplicaCount: min, maxReplicaCount: max, pollingInterval: step } = so.spec;
  const threshold = Number(so.spec.triggers[0].metadata.threshold);
  const { scaleUp, scaleDown } = so.spec.advanced.horizontalPodAutoscalerConfig.behavior as { scaleUp: Rules; scaleDown: Rules };
  let replicas = min;
  const recommendations: Array<{ t: number; desired: number }> = [];
  /** Pods added (up) or removed within the last `period` seconds. */
  const events: Array<{ t: number; delta: number }> = [];
  const changedWithin = (t: number, period: number, up: boolean) =>
    events.filter((e) => e.t > t - period && (up ? e.delta > 0 : e.delta < 0)).reduce((n, e) => n + Math.abs(e.delta), 0);
  return metric.map((value, i) => {
    const t = i * step;
    const before = replicas;
    const ratio = value / (threshold * replicas);
    let desired = Math.abs(ratio - 1) <= 0.1 ? replicas : Math.ceil(value / threshold);
    desired = Math.min(max, Math.max(min, desired));
    recommendations.push({ t, desired });
    if (desired > replicas) {
      const window = recommendations.filter((r) => r.t > t - scaleUp.stabilizationWindowSeconds).map((r) => r.desired);
      desired = Math.min(desired, ...(window.length ? window : [desired]));
      const allowed = Math.max(
        ...scaleUp.policies.map((p) => (p.type === 'Pods' ? p.value : Math.ceil((replicas * p.value) / 100)) - changedWithin(t, p.periodSeconds, true)),
      );
      replicas = Math.min(desired, replicas + Math.max(0, allowed));
    } else if (desired < replicas) {
      desired = Math.max(...recommendations.filter((r) => r.t > t - scaleDown.stabilizationWindowSeconds).map((r) => r.desired));
      const allowed = Math.max(
        ...scaleDown.policies.map((p) => (p.type === 'Pods' ? p.value : Math.floor((replicas * p.value) / 100)) - changedWithin(t, p.periodSeconds, false)),
      );
      replicas = Math.max(desired, replicas - Math.max(0, allowed));
    }
    if (replicas !== before) events.push({ t, delta: replicas - before });
    return replicas;
  });
}

describe('autoscaling of capture instances, simulated on a burst, a steady stretch and a drain', () => {
  let so: K8sObject;
  let metric: number[];
  let phases: Recording['phases'];
  let replicas: number[];
  before(function () {
    this.timeout(30_000);
    so = find(render('overlays/large'), 'ScaledObject', 'capture');
    ({ samples: metric, phases } = recording());
    replicas = simulate(so, metric);
    if (process.env.SIM_TRACE) console.log(metric.map((m, i) => `${m}:${replicas[i]}`).join(' '));
  });
  const step = () => so.spec.pollingInterval as number;

  it('stays within its minimum and maximum', () => {
    expect(Math.min(...replicas)).to.equal(so.spec.minReplicaCount);
    for (const r of replicas) expect(r).to.be.within(so.spec.minReplicaCount, so.spec.maxReplicaCount);
  });

  it('rises with the burst, within a minute of the demand, by at most its policy per period', () => {
    const threshold = Number(so.spec.triggers[0].metadata.threshold);
    const peak = Math.max(...metric);
    // Enough: the peak within the HPA's 10% tolerance of the instances' targets.
    const needed = Math.min(so.spec.maxReplicaCount, Math.ceil(peak / (threshold * 1.1)));
    const peakAt = metric.findIndex((m) => m >= peak - 1);
    const reached = replicas.findIndex((r) => r >= needed);
    expect(reached, `${needed} instances for ${peak} captures in flight`).to.be.greaterThan(-1);
    expect((reached - peakAt) * step(), 'seconds from the peak to enough instances').to.be.at.most(60);
    const policy = so.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.policies[0] as Policy;
    const perPeriod = policy.periodSeconds / step();
    for (let i = perPeriod; i < replicas.length; i++) expect((replicas[i] as number) - (replicas[i - perPeriod] as number)).to.be.at.most(policy.value);
  });

  it('holds steady while the demand is steady (no flapping on jitter)', () => {
    // The last 20 polls (5 minutes) of the steady stretch, well after the burst's queue drained.
    const steady = replicas.slice(phases.steady.to - 20, phases.steady.to);
    expect(new Set(steady).size, `replicas in the steady stretch: ${steady}`).to.equal(1);
  });

  it('waits out its cool-down after the drain, then removes one pod at a time down to its minimum', () => {
    const drainAt = phases.drain.from;
    const cooldown = so.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds / step();
    const before = replicas[drainAt - 1] as number;
    // The last poll whose demand still called for that many instances: the cool-down runs from there.
    const threshold = Number(so.spec.triggers[0].metadata.threshold);
    const lastNeed = metric.slice(0, drainAt).reduce((last, m, i) => (Math.ceil(m / threshold) >= before ? i : last), -1);
    const firstDrop = replicas.findIndex((r, i) => i >= drainAt && r < before);
    expect(firstDrop - lastNeed, `polls from the last demand for ${before} instances to the first removal`).to.be.at.least(cooldown);
    const policy = so.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.policies[0] as Policy;
    const perPeriod = policy.periodSeconds / step();
    for (let i = drainAt + perPeriod; i < replicas.length; i++)
      expect((replicas[i - perPeriod] as number) - (replicas[i] as number)).to.be.at.most(policy.value);
    expect(replicas[replicas.length - 1]).to.equal(so.spec.minReplicaCount);
  });
});
