/**
 * research_jobs and research_domains: every query capture makes on them. A request is
 * written whole in one transaction (its row, a row per domain, and each domain's unit of
 * work in `jobs`, kind 'research'), before its job_id is given out. A domain is finished in
 * one transaction too, only while its worker holds the job's lease: its result, its job, the
 * request's counters and, when it was the last domain, the request's end and its webhook
 * delivery (the notifier's outbox). The request's row is locked while its counters are read
 * back, so of two domains finishing at once exactly one sees the request end.
 */
import type { Knex } from 'knex';
import type { Config } from '../../shared/config';
import { isMysql } from '../../shared/database';
import type { ResearchInput } from '../../shared/contracts';
import type { ResearchField, ResearchPage, ResearchResult, ResearchStatus } from '../../shared/domain-research';
import { cdnLink } from '../../shared/links';
import { appendDelivery, webhookBody } from '../../notifier/public/outbox';
import type { ResearchDeliveryBody } from '../../notifier/public/webhook-records';
import { type ListOrder, type Paging, fetchPage } from '../../shared/paging';
import { LeasedRows } from '../../shared/lease';
import type { AnalysisOptions } from '../../shared/screenshot-options';
import { JOB_LEASE, type LeasedJob } from '../jobs/jobs';

/** The state and progress of a request from its counts. */
export function researchStatusOf(r: {
  total: number;
  completed: number;
  failed: number;
  running: boolean;
}): Pick<ResearchStatus, 'status' | 'percent_complete'> {
  const finished = r.completed + r.failed;
  const percent_complete = r.total > 0 ? Math.floor((finished * 100) / r.total) : 100;
  if (finished >= r.total) return { status: r.completed > 0 || r.total === 0 ? 'completed' : 'failed', percent_complete };
  return { status: finished > 0 || r.running ? 'running' : 'queued', percent_complete };
}

/** The body of the webhook delivery sent when a request's last domain finished. */
export function researchDeliveryBody(status: ResearchStatus, baseUrl: string): string {
  const report = `${baseUrl}/api/domain_research_requests/${status.job_id}/report`;
  const body: ResearchDeliveryBody = { type: 'domain_research.finished', ...status, report_url: report, csv_report_url: `${report}?format=csv` };
  return webhookBody('research', body);
}

/** A new request as the api validated it, with its id and each domain's job id. */
export type NewResearch = Omit<ResearchInput, 'domains'> & { id: string; domains: Array<ResearchInput['domains'][number] & { jobId: string }> };

/** What one domain's work needs to know. */
export interface DomainWork {
  jobId: string;
  researchId: string;
  accountId: string;
  domain: string;
  url: string;
  notes: string | null;
  structures: ResearchField[];
  aiOptions: AnalysisOptions;
}

/** A page read, as stored (its link is built when shown). */
export interface StoredPage {
  url: string;
  title: string;
  image_name: string;
}

/** How a domain ended. */
export type DomainRecord =
  | { status: 'completed'; data: Record<string, unknown>; sources: Record<string, string | null>; pages: StoredPage[] }
  | { status: 'failed'; error: { error_code: string; note: string }; pages: StoredPage[] };

interface ResearchRow {
  id: string;
  account_id: string;
  name: string | null;
  additional_notes: string | null;
  structures: string;
  ai_options: string;
  webhook_url: string | null;
  total_domains: number | string;
  completed_domains: number | string;
  failed_domains: number | string;
  created_at_ms: number | string;
  finished_at_ms: number | string | null;
}

interface DomainRow {
  id: string;
  research_id: string;
  position: number;
  domain: string;
  url: string;
  status: 'queued' | 'completed' | 'failed';
  data: string | null;
  sources: string | null;
  pages: string | null;
  error_code: string | null;
  note: string | null;
  finished_at_ms: number | string | null;
  job_status?: string | null;
}

const LIST_ORDER: ListOrder = { table: 'research_jobs', columns: ['created_at_ms', 'id'], key: 'id' };
const iso = (ms: number | string | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
const INSERT_BATCH = 200;

export class ResearchRepository {
  /** The leases of the domains' jobs, held by the job worker. */
  private readonly jobs: LeasedRows;

  constructor(
    private readonly db: Knex,
    private readonly links: Pick<Config, 'cdnUrl'>,
    private readonly now: () => number = Date.now,
  ) {
    this.jobs = new LeasedRows(db, JOB_LEASE);
  }

  /** Writes the request, its domains and their jobs (queued), all or nothing. */
  async create(r: NewResearch): Promise<ResearchStatus> {
    const now = this.now();
    await this.db.transaction(async (trx) => {
      await trx('research_jobs').insert({
        id: r.id,
        account_id: r.accountId,
        name: r.name,
        additional_notes: r.notes,
        structures: JSON.stringify(r.structures),
        ai_options: JSON.stringify(r.aiOptions),
        webhook_url: r.webhookUrl,
        total_domains: r.domains.length,
        created_at_ms: now,
      });
      const domains = r.domains.map((d, position) => ({
        id: d.jobId,
        research_id: r.id,
        account_id: r.accountId,
        position,
        domain: d.domain,
        url: d.url,
        status: 'queued',
      }));
      const jobs = r.domains.map((d) => ({ id: d.jobId, account_id: r.accountId, config_id: r.id, kind: 'research', status: 'queued', created_at_ms: now }));
      for (let i = 0; i < domains.length; i += INSERT_BATCH) {
        await trx('research_domains').insert(domains.slice(i, i + INSERT_BATCH));
        await trx('jobs').insert(jobs.slice(i, i + INSERT_BATCH));
      }
    });
    return (await this.status(r.accountId, r.id)) as ResearchStatus;
  }

  private statusOf(row: ResearchRow, running: boolean): ResearchStatus {
    const total = Number(row.total_domains);
    const completed = Number(row.completed_domains);
    const failed = Number(row.failed_domains);
    return {
      job_id: row.id,
      name: row.name,
      ...researchStatusOf({ total, completed, failed, running }),
      completed_domains: completed,
      failed_domains: failed,
      total_domains: total,
      created_at: iso(row.created_at_ms) as string,
      finished_at: iso(row.finished_at_ms),
    };
  }

  /** Which of these requests have a domain under way now. */
  private async running(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db('jobs').whereIn('config_id', ids).where({ kind: 'research', status: 'running' }).distinct('config_id');
    return new Set(rows.map((r) => r.config_id as string));
  }

  private row(accountId: string, id: string): Promise<ResearchRow | undefined> {
    return this.db('research_jobs').where({ id, account_id: accountId }).first();
  }

  /** null for an unknown id, or another account's. */
  async status(accountId: string, id: string): Promise<ResearchStatus | null> {
    const row = await this.row(accountId, id);
    if (!row) return null;
    return this.statusOf(row, (await this.running([id])).has(id));
  }

  async list(accountId: string, paging: Paging): Promise<{ requests: ResearchStatus[]; has_more: boolean }> {
    const page = await fetchPage(this.db('research_jobs').where({ account_id: accountId }), paging, LIST_ORDER, (r: ResearchRow) => r);
    const running = await this.running(page.items.filter((r) => r.finished_at_ms === null).map((r) => r.id));
    return { requests: page.items.map((r) => this.statusOf(r, running.has(r.id))), has_more: page.has_more };
  }

  private pagesOf(raw: string | null): ResearchPage[] {
    const pages = raw ? (JSON.parse(raw) as StoredPage[]) : [];
    return pages.map((p) => ({ url: p.url, title: p.title, direct_link: cdnLink(this.links, p.image_name) }));
  }

  private resultOf(d: DomainRow): ResearchResult {
    const status = d.status === 'queued' && d.job_status === 'running' ? 'running' : d.status;
    return {
      domain: d.domain,
      url: d.url,
      status,
      data: d.data ? (JSON.parse(d.data) as Record<string, unknown>) : null,
      sources: d.sources ? (JSON.parse(d.sources) as Record<string, string | null>) : null,
      pages: this.pagesOf(d.pages),
      error: d.error_code ? { error_code: d.error_code, note: d.note ?? '' } : null,
      finished_at: iso(d.finished_at_ms),
    };
  }

  /**
   * Part of a report: the request (status, notes, structures) when `from` is 0, and the
   * domains from position `from` on, as many as fit in `budgetBytes` of JSON (at least one),
   * so that no answer crossing the transporter grows with the request. `next`: the position
   * to ask for next, or null at the end. null for an unknown id, or another account's.
   */
  async report(
    accountId: string,
    id: string,
    from: number,
    budgetBytes: number,
  ): Promise<{
    head: (ResearchStatus & { additional_notes: string | null; structures: ResearchField[] }) | null;
    results: ResearchResult[];
    next: number | null;
  } | null> {
    const row = await this.row(accountId, id);
    if (!row) return null;
    const head =
      from === 0
        ? {
            ...this.statusOf(row, (await this.running([id])).has(id)),
            additional_notes: row.additional_notes,
            structures: JSON.parse(row.structures) as ResearchField[],
          }
        : null;
    const results: ResearchResult[] = [];
    let used = 0;
    let position = from;
    const batch = 50;
    for (;;) {
      const rows = (await this.db('research_domains')
        .leftJoin('jobs', 'jobs.id', 'research_domains.id')
        .where('research_domains.research_id', id)
        .where('research_domains.position', '>=', position)
        .orderBy('research_domains.position')
        .limit(batch)
        .select('research_domains.*', 'jobs.status as job_status')) as DomainRow[];
      for (const d of rows) {
        const result = this.resultOf(d);
        const size = JSON.stringify(result).length;
        if (results.length > 0 && used + size > budgetBytes) return { head, results, next: d.position };
        results.push(result);
        used += size;
        position = d.position + 1;
      }
      if (rows.length < batch) return { head, results, next: null };
    }
  }

  /** A domain's work, by its job's id; null when it is gone. */
  async work(jobId: string): Promise<DomainWork | null> {
    const d = await this.db('research_domains')
      .where({ 'research_domains.id': jobId })
      .join('research_jobs', 'research_jobs.id', 'research_domains.research_id')
      .first(
        'research_domains.id as job_id',
        'research_domains.research_id',
        'research_domains.account_id',
        'research_domains.domain',
        'research_domains.url',
        'research_jobs.additional_notes',
        'research_jobs.structures',
        'research_jobs.ai_options',
      );
    if (!d) return null;
    return {
      jobId: d.job_id,
      researchId: d.research_id,
      accountId: d.account_id,
      domain: d.domain,
      url: d.url,
      notes: d.additional_notes,
      structures: JSON.parse(d.structures) as ResearchField[],
      aiOptions: JSON.parse(d.ai_options) as AnalysisOptions,
    };
  }

  /**
   * Records how a domain ended, only while `job`'s lease is held: false when it was lost
   * (another instance took the domain over; its outcome counts). `ended`: the request's
   * status when this was its last domain (its webhook delivery, if it has a webhook_url, is
   * written in the same transaction, its body made by `delivery`).
   */
  async finish(
    job: LeasedJob,
    record: DomainRecord,
    delivery: (status: ResearchStatus) => string,
  ): Promise<{ recorded: boolean; ended: ResearchStatus | null }> {
    const now = this.now();
    const held = await this.jobs.whileHeld(
      job,
      async (trx, owner): Promise<{ recorded: boolean; ended: ResearchStatus | null }> => {
        const researchId = owner.config_id as string;
        const failed = record.status === 'failed' ? record.error : null;
        await trx('research_domains')
          .where({ id: job.id })
          .update({
            status: record.status,
            data: record.status === 'completed' ? JSON.stringify(record.data) : null,
            sources: record.status === 'completed' ? JSON.stringify(record.sources) : null,
            pages: JSON.stringify(record.pages),
            error_code: failed?.error_code ?? null,
            note: failed?.note ?? null,
            finished_at_ms: now,
          });
        await this.jobs.end(job, { status: record.status, error_code: failed?.error_code ?? null, note: failed?.note ?? null, finished_at_ms: now }, trx);
        await trx('research_jobs')
          .where({ id: researchId })
          .increment(record.status === 'completed' ? 'completed_domains' : 'failed_domains', 1);
        let read = trx('research_jobs').where({ id: researchId }).first();
        if (isMysql(trx)) read = read.forUpdate();
        const row = (await read) as ResearchRow;
        const finished = Number(row.completed_domains) + Number(row.failed_domains) >= Number(row.total_domains);
        if (!finished || row.finished_at_ms !== null) return { recorded: true, ended: null };
        await trx('research_jobs').where({ id: researchId }).update({ finished_at_ms: now });
        const ended = this.statusOf({ ...row, finished_at_ms: now }, false);
        if (row.webhook_url) {
          await appendDelivery(trx, {
            accountId: row.account_id,
            configId: null,
            kind: 'research',
            sendTo: 'webhook',
            url: row.webhook_url,
            body: delivery(ended),
            jobId: researchId,
            now,
          });
        }
        return { recorded: true, ended };
      },
      ['config_id'],
    );
    return held ?? { recorded: false, ended: null };
  }
}
