/**
 * The console's open live views on this server, by session: capped per
 * session, per user (all their sessions together: signing in again is free)
 * and per server, and ended as soon as their session ends, whether
 * by Sign out here or by anything that removes the session from the store
 * (expiry, another server's sign-out, `inlet user` from another process).
 */

/** How often the sessions of open views are checked against the store. */
export const SESSION_SWEEP_MS = 1000;

/** Why a view was not opened. */
export type LiveRefusal = 'session_full' | 'user_full' | 'server_full';

/** A view's way to end itself. */
type End = () => void;

/** The open views and their caps; one per server. */
export class LiveStreams {
  /** Each session's views, by session token (kept in memory only, as the request had it). */
  private readonly bySession = new Map<string, Set<End>>();
  /** Views open per user id. */
  private readonly byUser = new Map<string, number>();
  private count = 0;
  private sweeper: NodeJS.Timeout | null = null;
  private sweeping = false;

  constructor(
    readonly perServer: number,
    readonly perSession: number,
    readonly perUser: number,
    /** Whether the session a token stands for is still open (not deleted, not expired). */
    private readonly sessionOpen: (token: string) => Promise<boolean>,
    private readonly sweepMs = SESSION_SWEEP_MS,
  ) {}

  /** Registers a view of the session, or says which cap it would pass; the returned function forgets it. */
  open(token: string, userId: string, end: End): LiveRefusal | (() => void) {
    const mine = this.bySession.get(token);
    if ((mine?.size ?? 0) >= this.perSession) return 'session_full';
    const users = this.byUser.get(userId) ?? 0;
    if (users >= this.perUser) return 'user_full';
    if (this.count >= this.perServer) return 'server_full';
    const set = mine ?? new Set<End>();
    this.bySession.set(token, set);
    set.add(end);
    this.byUser.set(userId, users + 1);
    this.count++;
    // One timer for all views, only while there are any: an idle server does no sweeps.
    this.sweeper ??= setInterval(() => void this.sweep(), this.sweepMs).unref();
    return () => this.forget(token, userId, end);
  }

  /** Ends every view of a session (Sign out on this server). */
  endSession(token: string): void {
    for (const end of [...(this.bySession.get(token) ?? [])]) end();
  }

  /** Ends every view (the server stops). */
  endAll(): void {
    for (const token of [...this.bySession.keys()]) this.endSession(token);
  }

  /** Views open now. */
  get size(): number {
    return this.count;
  }

  private forget(token: string, userId: string, end: End): void {
    const set = this.bySession.get(token);
    if (set === undefined || !set.delete(end)) return;
    this.count--;
    const users = this.byUser.get(userId)! - 1;
    if (users === 0) this.byUser.delete(userId);
    else this.byUser.set(userId, users);
    if (set.size === 0) this.bySession.delete(token);
    if (this.count === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  /** One look-up per session with views, not per view or per event; a sweep still running skips the next. */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      await Promise.all(
        [...this.bySession.keys()].map(async (token) => {
          // A store that cannot answer ends nothing: the heartbeat's check decides then.
          const open = await this.sessionOpen(token).catch(() => true);
          if (!open) this.endSession(token);
        }),
      );
    } finally {
      this.sweeping = false;
    }
  }
}
