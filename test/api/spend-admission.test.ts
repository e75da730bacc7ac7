/**
 * One admission for everything that spends, end to end (the real api, billing, ai and proxy
 * services; no capture service, so nothing gets past admission unseen): the same bad request
 * sent to /snap, /snap_html, /snap_ai_analysis, configuration create, /ai/analyze and domain
 * research gets the same status and error_code from each, and each of those routes documents
 * (OpenAPI) the code it answered.
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { backendConfig } from '../support/backends';
import { type HttpAnswer, qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

type Body = Record<string, unknown>;
type Problem = {
  /** What the request names: an AI provider, a model, a prompt, the analysis flag. */
  ai: Body;
  /** A URL it names literally: where each endpoint takes one (a change step, an image, a domain). */
  address?: string;
};

describe('one admission for everything that spends (api, billing, ai, proxy)', function () {
  this.timeout(30_000);
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
  });
  after(async () => {
    await sys?.stop();
    await cleanup?.();
  });

  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  const changeStep = (url: string) => [{ type: 'change', selector: '#price', send_to: 'webhook', url }];

  /** Each spending endpoint, sent the same problem in its own shape. */
  const endpoints: Record<string, { method: string; path: string; send: (key: string, p: Problem) => Promise<HttpAnswer> }> = {
    '/snap': {
      method: 'get',
      path: '/snap',
      send: (key, p) =>
        request(
          sys.base,
          'GET',
          `/snap?${qs({ access_token: key, url: 'https://example.com', ...(p.address ? { multi_step_actions: JSON.stringify(changeStep(p.address)) } : {}), ...(p.ai as Record<string, string>) })}`,
        ),
    },
    '/snap_html': {
      method: 'post',
      path: '/snap_html',
      send: (key, p) =>
        request(sys.base, 'POST', '/snap_html', {
          headers: auth(key),
          json: { html_content: '<p>42 EUR</p>', ...(p.address ? { multi_step_actions: changeStep(p.address) } : {}), ...p.ai },
        }),
    },
    '/snap_ai_analysis': {
      method: 'post',
      path: '/snap_ai_analysis',
      send: (key, p) =>
        request(sys.base, 'POST', '/snap_ai_analysis', {
          headers: auth(key),
          json: { url: 'https://example.com', ...(p.address ? { multi_step_actions: changeStep(p.address) } : {}), ai_prompt: 'What is it?', ...p.ai },
        }),
    },
    '/screenshot_configs': {
      method: 'post',
      path: '/screenshot_configs',
      send: (key, p) =>
        request(sys.base, 'POST', '/screenshot_configs', {
          headers: auth(key),
          json: { url: 'https://example.com', ...(p.address ? { multi_step_actions: changeStep(p.address) } : {}), ...p.ai },
        }),
    },
    '/ai/analyze': {
      method: 'post',
      path: '/ai/analyze',
      send: (key, p) => {
        const { analyze_image_with_ai: _, ai_prompt: __, ...ai } = p.ai;
        return request(sys.base, 'POST', '/ai/analyze', {
          headers: auth(key),
          json: { urls: [p.address ?? 'https://images.example.com/a.png'], prompts: ['What is it?'], ...ai },
        });
      },
    },
    '/api/domain_research_requests': {
      method: 'post',
      path: '/api/domain_research_requests',
      send: (key, p) => {
        const { analyze_image_with_ai: _, ai_prompt: __, ...ai } = p.ai;
        return request(sys.base, 'POST', '/api/domain_research_requests', {
          headers: auth(key),
          json: {
            domains: [p.address ?? 'example.com'],
            structures: [{ data_type: 'string', data_field_name: 'ceo', data_field_prompt_description: 'The chief executive' }],
            ...ai,
          },
        });
      },
    },
  };

  /** The problem sent to every endpoint, and what each answered: [endpoint, status, error_code]. */
  async function sendEverywhere(key: string, problem: Problem): Promise<Array<[string, number, unknown]>> {
    const answers: Array<[string, number, unknown]> = [];
    for (const [name, endpoint] of Object.entries(endpoints)) {
      const r = await endpoint.send(key, problem);
      answers.push([name, r.status, r.body?.error_code]);
    }
    return answers;
  }

  const usage = async (key: string) => (await request<{ results: Body }>(sys.base, 'GET', '/account_limits', { headers: auth(key) })).body.results;

  it('answers a refused address named literally before the plan gates, with the same code everywhere', async () => {
    const { access_token } = await sys.account('free');
    // An own AI provider the free plan does not allow (402 byok_plan_required), and an internal address named literally (400 url_not_allowed).
    const answers = await sendEverywhere(access_token, {
      ai: { analyze_image_with_ai: true, ai_provider: 'openai', ai_model: 'gpt-4o' },
      address: 'http://127.0.0.1/hook',
    });
    expect(answers).to.deep.equal(Object.keys(endpoints).map((name) => [name, 400, 'url_not_allowed']));
    // Nothing reserved anywhere.
    expect(await usage(access_token)).to.deep.include({ screenshot_current_month_usage: 0, domain_research_current_month_usage: 0 });
  });

  it('answers the plan gates before the analysis is judged, with the same code everywhere', async () => {
    const { access_token } = await sys.account('free');
    // The same own provider with a model no provider serves (the analysis check would answer 412 or 400).
    const answers = await sendEverywhere(access_token, { ai: { analyze_image_with_ai: true, ai_provider: 'openai', ai_model: 'no-such-model' } });
    expect(answers).to.deep.equal(Object.keys(endpoints).map((name) => [name, 402, 'byok_plan_required']));
  });

  it('answers the analysis before the credits, with the same code everywhere, in a month whose credits are used up', async () => {
    const { access_token, account_id } = await sys.account('free');
    await call(sys.broker, 'billing.charge', { accountId: account_id, amounts: { screenshots: 25, ai_credits: 25, research_domains: 25 } });
    // No backend for the service's own AI here (503 ai_service_not_configured), and no credit left of any kind (402).
    const answers = await sendEverywhere(access_token, { ai: { analyze_image_with_ai: true, ai_prompt: 'What is it?' } });
    expect(answers).to.deep.equal(Object.keys(endpoints).map((name) => [name, 503, 'ai_service_not_configured']));
  });

  it("checks /snap_ai_analysis's options with its fixed analysis in: html_only is refused as on /snap (it was captured as HTML, charged, no analysis)", async () => {
    const { access_token } = await sys.account('paid');
    const r = await request<Body>(sys.base, 'POST', '/snap_ai_analysis', {
      headers: auth(access_token),
      json: { url: 'https://example.com', ai_prompt: 'What is it?', html_only: true },
    });
    expect([r.status, r.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(r.body.note).to.contain('html_only=true captures none');
  });

  it('documents in OpenAPI, for each of these routes, every code the admission answered', async () => {
    const doc = (
      await request<{ paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> }>(sys.base, 'GET', '/openapi.json')
    ).body;
    const documented = (path: string, method: string, status: number) => doc.paths[path]?.[method]?.responses[String(status)]?.description ?? '';
    for (const { path, method } of Object.values(endpoints)) {
      expect(documented(path, method, 400), path).to.contain('url_not_allowed');
      expect(documented(path, method, 402), path).to.contain('byok_plan_required');
      expect(documented(path, method, 503), path).to.contain('ai_service_not_configured');
    }
    // Each route documents the credits it spends, and only the gates it runs.
    expect(documented('/snap', 'get', 402))
      .to.contain('real_location_bandwidth_exhausted')
      .and.contain('byo_proxy_plan_required');
    expect(documented('/api/domain_research_requests', 'post', 402))
      .to.contain('domain_research_limit_reached')
      .and.not.contain('byo_proxy');
    expect(documented('/ai/analyze', 'post', 402))
      .to.contain('ai_credits_exhausted')
      .and.not.contain('screenshot_limit_reached');
    // Capture-now admits the stored configuration as a new one: the plan gates included.
    expect(documented('/screenshot_configs/{id}/capture', 'post', 402)).to.contain('byok_plan_required');
  });
});
