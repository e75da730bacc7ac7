/**
 * What the capture service's research actions do: a request written with a job per domain
 * (ids given here, before anyone hears of it) and announced to the workers; its status and
 * its report read back for its account only (another account's id answers 404).
 */
import type { ResearchInput } from '../../shared/contracts';
import type { ResearchStatus } from '../../shared/domain-research';
import { serviceError } from '../../shared/errors';
import { randomId } from '../../shared/secrets';
import type { ResearchRepository } from './research-jobs';

/** The most bytes of JSON one part of a research report carries across the transporter (NATS takes 1 MB a message). */
export const REPORT_PART_BYTES = 256 * 1024;

export class ResearchDesk {
  constructor(
    private readonly repo: Pick<ResearchRepository, 'create' | 'status' | 'report'>,
    /** A domain's job was queued (the workers claim it). */
    private readonly queued: (jobId: string) => void,
  ) {}

  async create(input: ResearchInput): Promise<ResearchStatus> {
    const status = await this.repo.create({ ...input, id: randomId(12), domains: input.domains.map((d) => ({ ...d, jobId: randomId(12) })) });
    this.queued(status.job_id);
    return status;
  }

  async status(accountId: string, id: string): Promise<ResearchStatus> {
    return (await this.repo.status(accountId, id)) ?? notFound(id);
  }

  async report(accountId: string, id: string, from: number) {
    return (await this.repo.report(accountId, id, from, REPORT_PART_BYTES)) ?? notFound(id);
  }
}

function notFound(id: string): never {
  throw serviceError('not_found', `No domain research job "${id}" in this account.`);
}
