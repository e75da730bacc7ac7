/**
 * Domain research end to end: the real system on the real Grid, three local fixture sites
 * (alpha.test: a home page linking to about, pricing and pages that hold no facts;
 * beta.test: a home page and an about page; down.test: nothing listening), the service's AI
 * backend a local stand-in that answers as a model would, from the pages' text it is sent,
 * and a webhook receiver that verifies the signature with the `standardwebhooks` package.
 * Checked: which pages are read, the JSON and CSV reports field by field with their
 * sources, the webhook, the credits, and every bad input refused before anything is written.
 */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { call } from '../../services/shared/contracts';
import { type Behaviour, type FakeProvider, startFakeProvider } from '../support/ai-providers';
import { backendConfig, freePort } from '../support/backends';
import { startCaptureSystem } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, request } from '../support/http';
import { type LocalServer, servePages } from '../support/local-server';
import { type RunningSystem, runSystem } from '../support/system';
import { until } from '../support/wait';
import { type Receiver, startReceiver } from '../notifier/receivers';
import { parseCsv } from '../support/csv';

type Body = Record<string, unknown>;

const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

/** The sites, by host name: path to page. */
const SITES: Record<string, Record<string, string>> = {
  'alpha.test': {
    '/': page(
      'Alpha Widgets',
      '<h1>Alpha Widgets</h1><p>We make widgets for kitchens.</p><nav>' +
        '<a href="/blog/2024/01/launch">Our launch story</a> <a href="/login">Log in</a> <a href="/legal/privacy">Privacy</a> ' +
        '<a href="/pricing">Pricing</a> <a href="/about">About us</a> <a href="http://beta.test/">A partner</a></nav>',
    ),
    '/about': page('About Alpha', '<h1>About</h1><p>Alpha Widgets was founded in 2011 in Lyon. Our CEO is Marie Curie.</p>'),
    '/pricing': page('Pricing', '<h1>Pricing</h1><p>Plans: Basic, Pro, Enterprise. Free trial: yes, for 14 days.</p>'),
    '/blog/2024/01/launch': page('Launch', '<p>We launched.</p>'),
    '/login': page('Log in', '<form><input name="u"></form>'),
    '/legal/privacy': page('Privacy', '<p>We keep little.</p>'),
  },
  'beta.test': {
    '/': page('Beta Labs', '<h1>Beta Labs</h1><p>Founded in 1999.</p><a href="/about-us">About us</a>'),
    '/about-us': page('About Beta', '<p>We are a team of 12 in Oslo.</p>'),
  },
  'gamma.test': { '/': page('Gamma', '<p>Gamma sells gears.</p>') },
};

const FIELDS = [
  { data_type: 'number', data_field_name: 'founded_year', data_field_prompt_description: 'The year the company was founded' },
  { data_type: 'array', data_field_name: 'pricing plans', data_field_prompt_description: 'Names of its pricing plans' },
  { data_type: 'boolean', data_field_name: 'has_free_trial', data_field_prompt_description: 'Whether a free trial is offered' },
  { data_type: 'string', data_field_name: 'ceo', data_field_prompt_description: 'Name of the chief executive' },
];

/**
 * The model: reads the pages' text and the fields from what it is sent, and answers each
 * field it finds with the number of its page.
 */
function modelAnswer(body: Record<string, unknown> | undefined): Behaviour | undefined {
  const messages = (body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  const user = messages.find((m) => m.role === 'user');
  if (!Array.isArray(user?.content)) return undefined;
  const text = String((user.content as Array<{ type: string; text?: string }>).filter((c) => c.type === 'text').at(-1)?.text ?? '');
  const parts = text.split('\n\n---\n\n');
  const pages = parts.filter((p) => /^Page \d+: /.test(p));
  const keys = [...(parts.at(-1) ?? '').matchAll(/^- (f\d+): "([^"]+)"/gm)].map((m) => [m[1] as string, m[2] as string]);
  const find = (re: RegExp): { page: number; match: RegExpExecArray } | null => {
    for (const [i, p] of pages.entries()) {
      const match = re.exec(p);
      if (match) return { page: i + 1, match };
    }
    return null;
  };
  const none = (value: unknown) => ({ found: false, value, page: 0 });
  const answer: Record<string, unknown> = {};
  for (const [key, name] of keys) {
    if (name === 'founded_year') {
      const f = find(/founded in (\d{4})/i);
      answer[key] = f ? { found: true, value: Number(f.match[1]), page: f.page } : none(0);
    } else if (name === 'pricing plans') {
      const f = find(/Plans: ([^.]+)\./);
      answer[key] = f ? { found: true, value: String(f.match[1]).split(', '), page: f.page } : none([]);
    } else if (name === 'has_free_trial') {
      const f = find(/Free trial: yes/);
      answer[key] = f ? { found: true, value: true, page: f.page } : none(false);
    } else if (name === 'ceo') {
      const f = find(/CEO is ([A-Z]\w+ [A-Z]\w+)/);
      answer[key] = f ? { found: true, value: f.match[1], page: f.page } : none('');
    } else answer[key] = none('');
  }
  return { structured: answer };
}

describe('domain research (real Grid, local sites, the AI backend a stand-in reading what it is sent)', function () {
  this.timeout(180_000);
  let sites: LocalServer;
  let seen: string[];
  let ai: FakeProvider;
  let receiver: Receiver;
  let sys: RunningSystem;
  let key: string;
  let cleanup: () => Promise<void>;
  let downPort: number;

  before(async () => {
    seen = [];
    sites = await servePages(({ req, path }) => {
      const host = String(req.headers.host ?? '').split(':')[0] ?? '';
      seen.push(`${host}${path}`);
      const body = SITES[host]?.[path];
      return body === undefined ? undefined : { body };
    });
    downPort = await freePort();
    ai = await startFakeProvider('openai');
    ai.respond = (route, body) => (route === 'analyze' ? modelAnswer(body) : undefined);
    receiver = await startReceiver();
    const started = await startCaptureSystem({
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '2',
      CAPTURE_TIMEOUT_MS: '15000',
      AI_TIMEOUT_MS: '3000',
      WEBHOOK_POLL_MS: '200',
      SERVICE_AI_PROVIDER: 'openai',
      SERVICE_AI_BASE_URL: ai.baseUrl,
      SERVICE_AI_API_KEY: ai.key,
      SERVICE_AI_MODEL: 'gpt-4o-mini',
    });
    sys = started.sys;
    key = started.token;
    cleanup = started.cleanup;
  });
  after(async () => {
    await cleanup?.();
    for (const s of [sites, ai, receiver]) await s?.stop();
  });

  const api = (method: string, path: string, json?: Body, as = key): Promise<HttpAnswer<Body>> =>
    request<Body>(sys.base, method, path, { headers: { authorization: `Bearer ${as}` }, ...(json ? { json } : {}) });
  const site = (host: string) => `http://${host}:${sites.port}`;
  const researchUsed = async (as = key) => ((await api('GET', '/account_limits', undefined, as)).body.results as Body).domain_research_current_month_usage;
  const finished = async (jobId: string, as = key): Promise<Body> => {
    let last: Body = {};
    await until(
      `research job ${jobId} to finish`,
      async () => {
        last = (await api('GET', `/api/domain_research_requests/${jobId}/status`, undefined, as)).body;
        return last.status === 'completed' || last.status === 'failed';
      },
      150_000,
      500,
    );
    return last;
  };

  it(
    'researches three sites: the pages likely to hold the fields, each value with its page, one CSV row per domain, a signed webhook, one ' +
      'credit per domain',
    async () => {
      const created = await api('POST', '/api/domain_research_requests', {
        name: 'Kitchen suppliers',
        additional_notes: 'Prefer what the company says about itself.',
        domains: [`${site('alpha.test')}/`, `${site('beta.test')}`, `http://down.test:${downPort}/`],
        structures: FIELDS,
        webhook_url: `${receiver.origin}/research-done`,
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      expect(created.body).to.deep.include({
        success: true,
        name: 'Kitchen suppliers',
        total_domains: 3,
        completed_domains: 0,
        failed_domains: 0,
        percent_complete: 0,
        finished_at: null,
      });
      expect(created.body.status).to.be.oneOf(['queued', 'running']);
      const jobId = String(created.body.job_id);

      const status = await finished(jobId);
      expect(status).to.deep.include({
        success: true,
        job_id: jobId,
        name: 'Kitchen suppliers',
        status: 'completed',
        percent_complete: 100,
        completed_domains: 2,
        failed_domains: 1,
        total_domains: 3,
      });
      expect(status.finished_at).to.be.a('string');

      // The pages read: each home page, and the linked pages likely to hold the fields; never the blog post, sign-in or legal pages, or another site.
      expect(seen.filter((s) => s.startsWith('alpha.test')).sort()).to.deep.equal(['alpha.test/', 'alpha.test/about', 'alpha.test/pricing']);
      expect(seen.filter((s) => s.startsWith('beta.test')).sort()).to.deep.equal(['beta.test/', 'beta.test/about-us']);

      const report = await api('GET', `/api/domain_research_requests/${jobId}/report`);
      expect(report.status).to.equal(200);
      expect(report.body).to.deep.include({
        success: true,
        job_id: jobId,
        status: 'completed',
        additional_notes: 'Prefer what the company says about itself.',
        structures: FIELDS,
      });
      const [alpha, beta, down] = report.body.results as Body[];
      expect(alpha).to.deep.include({
        domain: `${site('alpha.test')}/`,
        url: `${site('alpha.test')}/`,
        status: 'completed',
        error: null,
        data: { founded_year: 2011, 'pricing plans': ['Basic', 'Pro', 'Enterprise'], has_free_trial: true, ceo: 'Marie Curie' },
        sources: {
          founded_year: `${site('alpha.test')}/about`,
          'pricing plans': `${site('alpha.test')}/pricing`,
          has_free_trial: `${site('alpha.test')}/pricing`,
          ceo: `${site('alpha.test')}/about`,
        },
      });
      expect((alpha!.pages as Body[]).map((p) => [p.url, p.title])).to.have.deep.members([
        [`${site('alpha.test')}/`, 'Alpha Widgets'],
        [`${site('alpha.test')}/about`, 'About Alpha'],
        [`${site('alpha.test')}/pricing`, 'Pricing'],
      ]);
      expect((alpha!.pages as Body[])[0]!.url).to.equal(`${site('alpha.test')}/`);
      // A field the pages do not answer is null, with no source: never invented.
      expect(beta).to.deep.include({
        domain: site('beta.test'),
        url: `${site('beta.test')}/`,
        status: 'completed',
        data: { founded_year: 1999, 'pricing plans': null, has_free_trial: null, ceo: null },
        sources: { founded_year: `${site('beta.test')}/`, 'pricing plans': null, has_free_trial: null, ceo: null },
      });
      expect(down).to.deep.include({ domain: `http://down.test:${downPort}/`, status: 'failed', data: null, sources: null, pages: [] });
      expect((down!.error as Body).error_code).to.equal('page_load_failed');
      // Each page's screenshot is served, as the model saw it.
      const shot = await request(sys.base, 'GET', new URL(String((alpha!.pages as Body[])[1]!.direct_link)).pathname);
      expect([shot.status, shot.headers.get('content-type')]).to.deep.equal([200, 'image/jpeg']);

      // What the model was sent for alpha: its three pages' screenshots and text, and the notes.
      const sent = ai.of('analyze').find((r) => JSON.stringify(r.body).includes('Alpha Widgets was founded in 2011'))!.body as {
        messages: Array<{ role: string; content: unknown }>;
      };
      const content = sent.messages.find((m) => m.role === 'user')!.content as Array<{ type: string }>;
      expect(content.filter((c) => c.type === 'image_url')).to.have.length(3);
      expect(JSON.stringify(sent.messages)).to.contain('Prefer what the company says about itself.').and.contain('Plans: Basic, Pro, Enterprise.');

      const csv = await api('GET', `/api/domain_research_requests/${jobId}/report?format=csv`);
      expect(csv.status).to.equal(200);
      expect(csv.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
      expect(csv.headers.get('content-disposition')).to.equal(`attachment; filename="domain-research-${jobId}.csv"`);
      const text = csv.raw.toString('utf8');
      expect(text.startsWith('\ufeff')).to.equal(true);
      const rows = parseCsv(text.slice(1));
      expect(rows).to.have.length(4);
      expect(rows[0]).to.deep.equal([
        'domain',
        'status',
        'founded_year',
        'pricing plans',
        'has_free_trial',
        'ceo',
        'error_code',
        'error_note',
        'founded_year (source)',
        'pricing plans (source)',
        'has_free_trial (source)',
        'ceo (source)',
      ]);
      expect(rows[1]).to.deep.equal([
        `${site('alpha.test')}/`,
        'completed',
        '2011',
        'Basic; Pro; Enterprise',
        'true',
        'Marie Curie',
        '',
        '',
        `${site('alpha.test')}/about`,
        `${site('alpha.test')}/pricing`,
        `${site('alpha.test')}/pricing`,
        `${site('alpha.test')}/about`,
      ]);
      expect(rows[2]).to.deep.equal([site('beta.test'), 'completed', '1999', '', '', '', '', '', `${site('beta.test')}/`, '', '', '']);
      expect(rows[3]!.slice(0, 7)).to.deep.equal([`http://down.test:${downPort}/`, 'failed', '', '', '', '', 'page_load_failed']);

      // The webhook: one delivery, verified by its signature, pointing at the report.
      await until('the research webhook', async () => receiver.received.length > 0, 20_000, 100);
      const [delivery] = receiver.received;
      const secret = String((await api('GET', '/webhook_secret')).body.secret);
      const verified = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as Body;
      expect(verified).to.deep.include({
        type: 'domain_research.finished',
        job_id: jobId,
        status: 'completed',
        completed_domains: 2,
        failed_domains: 1,
        total_domains: 3,
        report_url: `${sys.config.baseUrl}/api/domain_research_requests/${jobId}/report`,
        csv_report_url: `${sys.config.baseUrl}/api/domain_research_requests/${jobId}/report?format=csv`,
      });
      const log = (await api('GET', '/webhook_deliveries')).body.webhook_deliveries as Body[];
      expect(log.filter((d) => d.kind === 'research')).to.have.length(1);
      expect(log.find((d) => d.kind === 'research')).to.deep.include({ job_id: jobId, screenshot_configuration_id: null, status: 'delivered' });

      // One credit per domain: the site that did not answer is charged too (the work was done).
      expect(await researchUsed()).to.equal(3);
    },
  );

  it('fails a domain whose AI provider failed, and gives its credit back', async () => {
    const { access_token: other } = await sys.account('big');
    ai.queue('analyze', { status: 500 }, { status: 500 });
    const created = await api('POST', '/api/domain_research_requests', { domains: [site('gamma.test')], structures: FIELDS }, other);
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const status = await finished(String(created.body.job_id), other);
    expect(status).to.deep.include({ status: 'failed', completed_domains: 0, failed_domains: 1, percent_complete: 100 });
    const report = await api('GET', `/api/domain_research_requests/${created.body.job_id}/report`, undefined, other);
    const [gamma] = report.body.results as Body[];
    expect((gamma!.error as Body).error_code).to.equal('ai_provider_unavailable');
    expect((gamma!.pages as Body[]).map((p) => p.url)).to.deep.equal([`${site('gamma.test')}/`]);
    expect(await researchUsed(other)).to.equal(0);
  });

  it('lists the jobs newest first, paged, and hides each account’s jobs from the others (404)', async () => {
    const { access_token: mine } = await sys.account('big');
    const ids: string[] = [];
    for (const name of ['first', 'second']) {
      const r = await api('POST', '/api/domain_research_requests', { name, domains: [site('gamma.test')], structures: FIELDS.slice(0, 1) }, mine);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      ids.push(String(r.body.job_id));
    }
    const page1 = await api('GET', '/api/domain_research_requests?limit=1', undefined, mine);
    expect(page1.body).to.deep.include({ success: true, has_more: true });
    expect((page1.body.domain_research_requests as Body[]).map((j) => [j.job_id, j.name])).to.deep.equal([[ids[1], 'second']]);
    const all = await api('GET', '/api/domain_research_requests?order=ASC', undefined, mine);
    expect((all.body.domain_research_requests as Body[]).map((j) => j.job_id)).to.deep.equal(ids);
    expect(Object.keys((all.body.domain_research_requests as Body[])[0]!).sort()).to.deep.equal(
      ['job_id', 'name', 'status', 'percent_complete', 'completed_domains', 'failed_domains', 'total_domains', 'created_at', 'finished_at'].sort(),
    );
    for (const path of [
      `/api/domain_research_requests/${ids[0]}/status`,
      `/api/domain_research_requests/${ids[0]}/report`,
      `/api/domain_research_requests/${ids[0]}/report?format=csv`,
    ]) {
      expectEnvelope(await api('GET', path), 404, 'not_found', ids[0]!);
    }
    expectEnvelope(await api('GET', '/api/domain_research_requests/nosuchjob/status'), 404, 'not_found', 'nosuchjob');
    expect((await api('GET', '/api/domain_research_requests', undefined, (await sys.account('big')).access_token)).body.domain_research_requests).to.deep.equal(
      [],
    );
    for (const id of ids) await finished(id, mine);
  });

  it('refuses every bad input with the envelope before anything is written or reserved', async () => {
    const { access_token: free, account_id: freeId } = await sys.account('free');
    const ok = { domains: ['example.com'], structures: FIELDS.slice(0, 1) };
    const field = (over: Body) => ({ ...FIELDS[0], ...over });
    const cases: Array<[Body, number, string, ...string[]]> = [
      [{ structures: ok.structures }, 400, 'invalid_parameter', 'domains is required'],
      [{ domains: ok.domains }, 400, 'invalid_parameter', 'structures is required'],
      [{ ...ok, domains: [] }, 400, 'invalid_parameter', 'domains', 'at least 1'],
      [{ ...ok, domains: Array.from({ length: 1001 }, (_, i) => `site${i}.example`) }, 400, 'invalid_parameter', 'domains', 'at most 1000'],
      [{ ...ok, domains: ['example.com', 'not a domain'] }, 400, 'invalid_parameter', 'domains[1]', 'spaces'],
      [{ ...ok, domains: ['ftp://example.com'] }, 400, 'invalid_parameter', 'domains[0]', 'ftp:'],
      [{ ...ok, domains: ['example'] }, 400, 'invalid_parameter', 'domains[0]', 'not a host name'],
      [{ ...ok, domains: ['example.com', 'https://example.com/'] }, 400, 'invalid_parameter', 'domains[1]', 'same site as domains[0]'],
      [
        { ...ok, structures: Array.from({ length: 101 }, (_, i) => field({ data_field_name: `f${i}` })) },
        400,
        'invalid_parameter',
        'structures',
        'at most 100',
      ],
      [{ ...ok, structures: [field({ data_type: 'date' })] }, 400, 'invalid_parameter', 'structures[0].data_type', 'string, array, boolean, number'],
      [{ ...ok, structures: [field({ data_field_name: 'x'.repeat(101) })] }, 400, 'invalid_parameter', 'structures[0].data_field_name', 'at most 100'],
      [{ ...ok, structures: [field({ data_field_name: '   ' })] }, 400, 'invalid_parameter', 'structures[0].data_field_name', 'blank'],
      [
        { ...ok, structures: [field({ data_field_prompt_description: 'x'.repeat(2001) })] },
        400,
        'invalid_parameter',
        'data_field_prompt_description',
        'at most 2000',
      ],
      [
        { ...ok, structures: [field({ data_field_name: 'ceo' }), field({ data_field_name: 'CEO' })] },
        400,
        'invalid_parameter',
        'structures[1].data_field_name',
        'taken',
      ],
      [{ ...ok, structures: [field({ data_field_name: 'status' })] }, 400, 'invalid_parameter', "report's own columns"],
      [{ ...ok, structures: [field({ extra: 1 })] }, 400, 'invalid_parameter', 'extra'],
      [{ ...ok, name: 'x'.repeat(201) }, 400, 'invalid_parameter', 'name', 'at most 200'],
      [{ ...ok, webhook_url: 'not a url' }, 400, 'invalid_parameter', 'webhook_url'],
      [{ ...ok, surprise: true }, 400, 'invalid_parameter', 'surprise'],
      [{ ...ok, ai_provider: 'gemini' }, 400, 'ai_provider_unsupported'],
      [{ ...ok, ai_provider: 'openai' }, 402, 'byok_plan_required'],
      // 25 research credits a month on the free plan: 26 domains are refused before anything starts.
      [{ ...ok, domains: Array.from({ length: 26 }, (_, i) => `site${i}.example`) }, 402, 'domain_research_limit_reached', 'needs 26', '25'],
    ];
    for (const [json, status, code, ...fragments] of cases) {
      const r = await api('POST', '/api/domain_research_requests', json, free);
      expectEnvelope(r, status, code, ...fragments);
    }
    expectEnvelope(await api('GET', '/api/domain_research_requests/x/report?format=xml', undefined, free), 400, 'invalid_parameter', 'json, csv');
    // Nothing was written, nothing reserved.
    expect((await api('GET', '/api/domain_research_requests', undefined, free)).body.domain_research_requests).to.deep.equal([]);
    expect(await researchUsed(free)).to.equal(0);
    // With 24 used, two domains are refused, one is taken.
    await call(sys.broker, 'billing.charge', { accountId: freeId, amounts: { research_domains: 24 } });
    expectEnvelope(
      await api('POST', '/api/domain_research_requests', { ...ok, domains: ['a.example', 'b.example'] }, free),
      402,
      'domain_research_limit_reached',
      '1 of',
    );
  });

  it('documents the endpoints in the OpenAPI document with their parameters and answers', async () => {
    const doc = (await request<Body>(sys.base, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, Body>> };
    const create = doc.paths['/api/domain_research_requests']!.post as {
      requestBody: { content: Record<string, { schema: Body }> };
      responses: Record<string, Body>;
    };
    const props = create.requestBody.content['application/json']!.schema.properties as Record<string, Body>;
    expect(props.structures).to.deep.include({ maxItems: 100, minItems: 1 });
    expect(props.domains).to.deep.include({ maxItems: 1000 });
    expect(create.responses['402']!.description).to.contain('domain_research_limit_reached');
    const report = doc.paths['/api/domain_research_requests/{job_id}/report']!.get as {
      parameters: Body[];
      responses: Record<string, { content: Record<string, { schema: Body }> }>;
    };
    expect(report.parameters.map((p) => p.name)).to.deep.equal(['job_id', 'format']);
    expect(Object.keys(report.responses['200']!.content)).to.deep.equal(['application/json', 'text/csv']);
    expect(report.responses['200']!.content['application/json']!.schema).to.have.nested.property('properties.results.items.properties.sources');
    expect(doc.paths['/api/domain_research_requests/{job_id}/status']!.get).to.have.nested.property(
      'responses.200.content.application/json.schema.properties.percent_complete',
    );
    const analyze = doc.paths['/ai/analyze']!.post as { requestBody: { content: Record<string, { schema: Body }> }; responses: Record<string, Body> };
    expect(analyze.requestBody.content['application/json']!.schema.properties).to.have.nested.property('urls.maxItems', 5);
    expect(analyze.responses['200']).to.have.nested.property('content.application/json.schema.properties.results');
    expect(analyze.responses['422']!.description).to.contain('image_unreachable');
    const limits = doc.paths['/account_limits']!.get as { responses: Record<string, { content: Record<string, { schema: Body }> }> };
    expect(limits.responses['200']!.content['application/json']!.schema).to.have.nested.property('properties.results.properties.domain_research_limit');
  });
});

describe('domain research under the egress policy (no private networks)', function () {
  this.timeout(30_000);
  let sys: RunningSystem;
  let ai: FakeProvider;
  let cleanup: () => Promise<void>;
  before(async () => {
    ai = await startFakeProvider('openai');
    const b = await backendConfig('sqlite', {
      SERVICES: 'api,billing,ai,proxy',
      SERVICE_AI_PROVIDER: 'openai',
      SERVICE_AI_BASE_URL: ai.baseUrl,
      SERVICE_AI_API_KEY: ai.key,
      SERVICE_AI_MODEL: 'gpt-4o-mini',
    });
    sys = await runSystem(b.config);
    cleanup = b.cleanup;
  });
  after(async () => {
    await sys?.stop();
    await cleanup?.();
    await ai?.stop();
  });

  it('refuses a domain or a webhook_url naming a private address, before anything is written or reserved', async () => {
    const { access_token } = await sys.account('free');
    const post = (json: Body) =>
      request<Body>(sys.base, 'POST', '/api/domain_research_requests', { headers: { authorization: `Bearer ${access_token}` }, json });
    const ok = { domains: ['example.com'], structures: FIELDS.slice(0, 1) };
    expectEnvelope(await post({ ...ok, domains: ['example.com', 'http://10.1.2.3/'] }), 400, 'url_not_allowed', 'domains[1]', '10.1.2.3');
    expectEnvelope(await post({ ...ok, domains: ['[::1]:8080'] }), 400, 'url_not_allowed', 'domains[0]', '::1');
    expectEnvelope(await post({ ...ok, webhook_url: 'http://169.254.169.254/hook' }), 400, 'url_not_allowed', 'webhook_url');
    // No capture service runs here: the refusals came before anything was handed to one.
    const limits = await request<{ results: Body }>(sys.base, 'GET', '/account_limits', { headers: { authorization: `Bearer ${access_token}` } });
    expect(limits.body.results.domain_research_current_month_usage).to.equal(0);
  });
});
