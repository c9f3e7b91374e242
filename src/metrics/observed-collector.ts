import type { Collector } from '../domain/collector.js';
import type { IngestJob } from '../domain/ingest/job.js';
import { StoreUnavailableError } from '../stores/port.js';
import type { Metrics } from './metrics.js';

/**
 * The write path over the store, with its key lookups and failures counted.
 * Everything else passes through untouched, so its contract is unchanged.
 */
export function observedCollector(collector: Collector, metrics: Metrics): Collector {
  const failedAs = (operation: string) => (e: unknown) => {
    if (e instanceof StoreUnavailableError) metrics.storeErrors.inc({ operation });
    throw e;
  };
  // The collector itself underneath (its prototype), three methods of its own on top: a Proxy
  // (a trap and a bound function on every property read) cost each request more than the counts.
  const wrapped = Object.create(collector) as Collector;
  Object.assign(wrapped, {
    authenticate: (hash: Buffer) =>
      collector.authenticate(hash).then((auth) => {
        metrics.keyLookups.inc({ result: auth === null ? 'not_found' : 'found' });
        return auth;
      }, (e: unknown) => {
        metrics.keyLookups.inc({ result: 'failed' });
        return failedAs('key_lookup')(e);
      }),
    ingest: (job: IngestJob) => collector.ingest(job).catch(failedAs('write')),
    ping: () => collector.ping().catch(failedAs('ping')),
  } satisfies Partial<Collector>);
  return wrapped;
}
