const MIB = 1_048_576;

/**
 * Bytes of request bodies being read at once, all connections together: 64 MiB,
 * 64 bodies of the largest size. A body that is being read holds its bytes
 * for as long as its client takes to send them, so without this bound a few
 * thousand slow senders hold gigabytes.
 */
export const READING_BUDGET_BYTES = 64 * MIB;

/**
 * A key's share of READING_BUDGET_BYTES: 16 MiB, so one key (one sender, or
 * one attacker with a key) can hold at most a quarter of it and every other
 * key keeps being read.
 */
export const READING_KEY_BUDGET_BYTES = 16 * MIB;

/** Bytes reserved for one body being read. */
export interface Reservation {
  /** Takes `bytes` more (a chunked body as it arrives); null, or the budget it would pass (taking nothing). */
  grow(bytes: number): BudgetSpent | null;
  /** Gives everything back; later calls do nothing. */
  release(): void;
}

/** Which budget a refused reservation would have passed. */
export type BudgetSpent = 'key' | 'server';

/**
 * Bodies being read, counted in bytes as sent: each request reserves its
 * declared Content-Length before a byte of its body is read (a chunked body
 * grows its reservation as it arrives), and gives it back once read, when
 * the body is weighed again by Admission. A reservation that does not fit
 * the server's budget or its key's share is refused, so the request can be
 * answered before its body is read.
 */
export class ReadBudget {
  private total = 0;
  private readonly byKey = new Map<string, number>();

  constructor(
    private readonly budget = READING_BUDGET_BYTES,
    private readonly keyBudget = READING_KEY_BUDGET_BYTES,
  ) {}

  /** Reserves `bytes` for a body of `key`, or says which budget it would pass. */
  reserve(key: string, bytes: number): Reservation | BudgetSpent {
    const spent = this.spent(key, bytes);
    if (spent !== null) return spent;
    this.take(key, bytes);
    let held = bytes;
    let released = false;
    return {
      grow: (more) => {
        const over = released ? 'server' : this.spent(key, more);
        if (over !== null) return over;
        this.take(key, more);
        held += more;
        return null;
      },
      release: () => {
        if (released) return;
        released = true;
        this.take(key, -held);
      },
    };
  }

  /** Bytes reserved by bodies being read (for metrics and tests). */
  get readingBytes(): number {
    return this.total;
  }

  /** Keys with a body being read (for metrics and tests). */
  get readingKeys(): number {
    return this.byKey.size;
  }

  private spent(key: string, bytes: number): BudgetSpent | null {
    if ((this.byKey.get(key) ?? 0) + bytes > this.keyBudget) return 'key';
    if (this.total + bytes > this.budget) return 'server';
    return null;
  }

  private take(key: string, bytes: number): void {
    this.total += bytes;
    const left = (this.byKey.get(key) ?? 0) + bytes;
    if (left === 0) this.byKey.delete(key);
    else this.byKey.set(key, left);
  }
}
