/**
 * The garbage collector's setting for every process that runs the service (startSystem).
 *
 * With V8's defaults, the service's old generation (about 50 MB live: the services, their
 * SDKs, the broker) is given a limit barely above what survives each full collection, so a
 * new incremental marking starts as soon as the last one ends: under a steady load of
 * captures, a full collection every four or five captures, and about half of the process's
 * CPU per capture spent collecting. Letting the old generation grow by 100% of what
 * survived before the next full collection (V8's `--heap-growing-percent`, read at every
 * collection, so it can be set once the process runs) keeps the heap about the same size
 * and collects it a tenth as often (docs/benchmark.md).
 */
import v8 from 'node:v8';

export const HEAP_GROWING_PERCENT = 100;

export function tuneHeap(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
