/**
 * The one admission (spend-admission.ts) with its neighbours stubbed (ai.check, proxy.checkRoute,
 * billing.checkRoom through the broker): its checks run in one order, each before anything
 * after it is asked; a route runs the checks it declares and no other; and the errors it
 * documents are those its checks can answer.
 */
import { expect } from 'chai';
import type { ServiceBroker } from 'moleculer';
import sinon from 'sinon';
import { admission, type AdmittedOptions, type Spending } from '../../services/api/spend-admission';
import type { TargetPolicy } from '../../services/shared/address-policy';
import type { AccountContext } from '../../services/shared/contracts';
import { serviceError } from '../../services/shared/errors';

const plan = (paid: boolean) => ({ name: paid ? 'paid' : 'free', paid, screenshot_limit: 25, max_concurrent: 1, max_queued: 2 });
const free: AccountContext = { accountId: 'acc1', plan: plan(false), addons: {} };
const paid: AccountContext = { accountId: 'acc1', plan: plan(true), addons: { byo_ai: 1, byo_proxy: 1 } };
const policy: TargetPolicy = { allowPrivateNetworks: false, refuses: (address) => address.startsWith('127.') || address.startsWith('10.') };

/** The capture shape: everything a configuration can name, and the credits of starting its job. */
const CAPTURE: Spending = { features: ['ownAi', 'ownProxy'], structuredFields: true, route: true, schedule: true, credits: ['screenshots', 'ai_credits'] };
/** An image analysis: an own provider, AI credits; no route, no schedule. */
const IMAGES: Spending = { features: ['ownAi'], structuredFields: false, route: false, schedule: false, credits: ['ai_credits'] };

/** A broker whose neighbours refuse as `refusing` says (action to error code); `asked()` lists the actions called. */
function neighbours(refusing: Record<string, Parameters<typeof serviceError>[0]>) {
  const call = sinon.stub().callsFake(async (action: string) => {
    const code = refusing[action];
    if (code) throw serviceError(code, `${action} refused`);
    if (action === 'ai.check') return { provider: 'openai', model: 'gpt-4o' };
    if (action === 'billing.checkRoom') return { left: {}, month: '2026-11' };
    if (action === 'proxy.checkRoute') return { ok: true, identity: 'what proxy 7 points to' };
    return { ok: true };
  });
  return { broker: { call } as unknown as ServiceBroker, asked: () => call.getCalls().map((c) => c.args[0] as string) };
}

/** A configuration with one problem for each check. */
const everyProblem: AdmittedOptions = {
  url: 'https://example.com',
  multi_step_actions: [{ type: 'change', selector: '#price', send_to: 'webhook', url: 'http://127.0.0.1/hook' }],
  analyze_image_with_ai: true,
  ai_provider: 'openai',
  custom_proxy_id: 7,
  scheduled_screenshot: true,
} as AdmittedOptions;

describe('one admission for everything that spends (neighbours stubbed)', () => {
  it('runs its checks in one order (targets, gates, analysis, route, schedule, room), the first failing one answering', async () => {
    const steps: Array<{ fix: string; account: AccountContext; given: AdmittedOptions; refusing: Record<string, Parameters<typeof serviceError>[0]> }> = [];
    const refusing = {
      'ai.check': 'ai_provider_not_configured',
      'proxy.checkRoute': 'custom_proxy_not_found',
      'billing.checkRoom': 'screenshot_limit_reached',
    } as const;
    let given = everyProblem;
    steps.push({ fix: 'none', account: free, given, refusing: { ...refusing } });
    given = {
      ...given,
      multi_step_actions: [{ type: 'change', selector: '#price', send_to: 'webhook', url: 'https://hooks.example.com/x' }],
    } as AdmittedOptions;
    steps.push({ fix: 'targets', account: free, given, refusing: { ...refusing } });
    steps.push({ fix: 'gates', account: paid, given, refusing: { ...refusing } });
    const { 'ai.check': _a, ...afterAnalysis } = refusing;
    steps.push({ fix: 'analysis', account: paid, given, refusing: afterAnalysis });
    const { 'proxy.checkRoute': _r, ...afterRoute } = afterAnalysis;
    steps.push({ fix: 'route', account: paid, given, refusing: afterRoute });
    given = { ...given, scheduled_interval: 'hours' } as AdmittedOptions;
    steps.push({ fix: 'schedule', account: paid, given, refusing: afterRoute });
    steps.push({ fix: 'room', account: paid, given, refusing: {} });

    const rule = admission(CAPTURE);
    const answered: string[] = [];
    const asked: string[][] = [];
    let admitted: unknown = null;
    for (const step of steps) {
      const n = neighbours(step.refusing);
      const err = await rule.admit({ broker: n.broker, account: step.account, policy, given: step.given, room: { screenshots: 1 } }).then(
        (result) => {
          admitted = result;
          return null;
        },
        (e) => e,
      );
      answered.push(err?.type ?? 'admitted');
      asked.push(n.asked());
      // Whatever a check answers, the route documents.
      if (err) expect(rule.errors, `${step.fix}: ${err.type}`).to.include(err.type);
    }
    expect(answered).to.deep.equal([
      'url_not_allowed',
      'byok_plan_required',
      'ai_provider_not_configured',
      'custom_proxy_not_found',
      'invalid_parameter',
      'screenshot_limit_reached',
      'admitted',
    ]);
    // Nothing later was asked before an earlier check passed.
    expect(asked).to.deep.equal([
      [],
      [],
      ['ai.check'],
      ['ai.check', 'proxy.checkRoute'],
      ['ai.check', 'proxy.checkRoute'],
      ['ai.check', 'proxy.checkRoute', 'billing.checkRoom'],
      ['ai.check', 'proxy.checkRoute', 'billing.checkRoom'],
    ]);
    // What the own proxy points to comes back with the admission (the snap's ttl key).
    expect(admitted).to.deep.equal({ targets: { proxy: 'what proxy 7 points to' } });
  });

  it('checks the targets a route names itself (an image, a domain) first, before the options’ own', async () => {
    const n = neighbours({});
    const err = await admission(IMAGES)
      .admit({
        broker: n.broker,
        account: free,
        policy,
        given: { analyze_image_with_ai: true, ai_provider: 'openai' },
        targets: [['urls[1]', 'http://10.1.2.3/a.png']],
      })
      .catch((e) => e);
    expect(err.type).to.equal('url_not_allowed');
    expect(err.message).to.contain('urls[1]');
    expect(n.asked()).to.deep.equal([]);
  });

  it('runs only the checks its route declares, and documents only what they answer', async () => {
    const rule = admission(IMAGES);
    expect(rule.errors).to.include.members([
      'url_not_allowed',
      'byok_plan_required',
      'byok_addon_required',
      'ai_provider_not_configured',
      'ai_credits_exhausted',
    ]);
    expect(rule.errors).not.to.include.members(['byo_proxy_plan_required']);
    for (const code of ['byo_proxy_addon_required', 'custom_proxy_not_found', 'invalid_ai_structured_fields', 'screenshot_limit_reached'] as const) {
      expect(rule.errors).not.to.include(code);
    }
    // A route option it does not declare is neither gated nor routed.
    const n = neighbours({ 'proxy.checkRoute': 'custom_proxy_not_found' });
    await rule.admit({ broker: n.broker, account: free, policy, given: { analyze_image_with_ai: true, custom_proxy_id: 7 } as AdmittedOptions });
    expect(n.asked()).to.deep.equal(['ai.check']);
    // Its credits' code is documented from the kind: the capture's are its own.
    expect(admission(CAPTURE).errors).to.include.members([
      'screenshot_limit_reached',
      'ai_credits_exhausted',
      'custom_proxy_not_found',
      'byo_proxy_addon_required',
    ]);
    expect(admission({ ...CAPTURE, credits: [] }).errors).not.to.include('screenshot_limit_reached');
  });

  it('refuses to ask the room of a credit its route does not declare (its 402 would be undocumented)', async () => {
    const n = neighbours({});
    const err = await admission(IMAGES)
      .admit({ broker: n.broker, account: paid, policy, given: { analyze_image_with_ai: true }, room: { research_domains: 2 } })
      .catch((e) => e);
    expect(err.message).to.contain('research_domains');
    expect(n.asked()).to.deep.equal(['ai.check']);
  });
});
