/**
 * What a service factory returns: the schema the broker creates, and a typed handle on the
 * running service for the composition root and tests (the api's port, the scheduler's
 * tick), so that nobody reaches into a service instance through a cast.
 */
import type { ServiceSchema } from 'moleculer';

export interface ServiceUnit<H extends object = Record<never, never>> {
  schema: ServiceSchema;
  handle: H;
}
