import type { Store } from '../stores/port.js';

/** What readiness needs of the store: a trivial query. */
type Pingable = Pick<Store, 'ping'>;

/** How long the store has to answer a readiness check. */
export const READY_TIMEOUT_MS = 1000;

/** Why a server is not ready, as its /readyz answer says it. */
export type NotReady = 'stopping' | 'store_unavailable';

/**
 * Whether this server should be sent traffic: it is not while it stops, nor
 * while its store does not answer a trivial query within READY_TIMEOUT_MS.
 */
export class Readiness {
  private stopping_ = false;

  constructor(
    private readonly store: Pingable,
    private readonly timeoutMs = READY_TIMEOUT_MS,
  ) {}

  /** From now on the server is never ready again: a stop has begun. */
  beginStop(): void {
    this.stopping_ = true;
  }

  get stopping(): boolean {
    return this.stopping_;
  }

  /** Null when ready, else why not. */
  async check(): Promise<NotReady | null> {
    if (this.stopping_) return 'stopping';
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.timeoutMs);
    });
    try {
      const answer = await Promise.race([this.store.ping().then(() => 'ok' as const), late]);
      return answer === 'ok' ? (this.stopping_ ? 'stopping' : null) : 'store_unavailable';
    } catch {
      return 'store_unavailable';
    } finally {
      clearTimeout(timer);
    }
  }
}
