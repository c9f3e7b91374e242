import type { KeyStore } from '../stores/port.js';

/** How often key last-used times are written. */
export const KEY_USE_FLUSH_MS = 1000;

/**
 * Keys' last-used times, noted per request and written together about once a
 * second, in one write: a request never waits on it, and a burst of
 * requests with one key writes its row once.
 */
export class KeyUses {
  private uses = new Map<string, number>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: KeyStore,
    /** Told of a write that failed; its uses wait for the next one. */
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {
    this.timer = setInterval(() => void this.flush(), KEY_USE_FLUSH_MS).unref();
  }

  note(keyId: string, at: number): void {
    this.uses.set(keyId, Math.max(at, this.uses.get(keyId) ?? 0));
  }

  /** Writes what was noted since the last write. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.uses.size === 0) return;
      const uses = this.uses;
      this.uses = new Map();
      try {
        await this.store.recordKeyUses(uses);
      } catch (e) {
        for (const [id, at] of uses) this.note(id, at);
        this.onError(e);
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
