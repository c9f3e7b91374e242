import type { Collector } from '../domain/collector.js';
import { StoreUnavailableError } from '../stores/port.js';
import type { Metrics } from './metrics.js';

/**
 * The write path over the store, with its key lookups and failures counted.
 * Everything else passes through untouched, so its contract is unchanged.
 */
export function observedStore(store: Collector, metrics: Metrics): Collector {
  const failedAs = (operation: string) => (e: unknown) => {
    if (e instanceof StoreUnavailableError) metrics.storeErrors.inc({ operation });
    throw e;
  };
  const wrapped: Partial<Collector> = {
    authenticate: (hash) =>
      store.authenticate(hash).then((auth) => {
        metrics.keyLookups.inc({ result: auth === null ? 'not_found' : 'found' });
        return auth;
      }, (e) => {
        metrics.keyLookups.inc({ result: 'failed' });
        return failedAs('key_lookup')(e);
      }),
    ingest: (job) => store.ingest(job).catch(failedAs('write')),
    ping: () => store.ping().catch(failedAs('ping')),
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && Object.hasOwn(wrapped, prop)) return wrapped[prop as keyof Collector];
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
