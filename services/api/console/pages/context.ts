/** What every signed-in page is given. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../../shared/config';
import type { ConsoleSession } from '../../../shared/contracts';

export interface ConsolePageContext {
  broker: ServiceBroker;
  config: Readonly<Config>;
  session: ConsoleSession;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** What a page may answer besides its HTML (200): another status (a form's refusal), another type, or a redirect (303, after a POST). */
export type PageAnswer = { status: number; body: string; type?: string } | { redirect: string };
