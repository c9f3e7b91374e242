const MIB = 1_048_576;

/**
 * Bytes of request bodies being read at once, all connections together: 64 MiB,
 * 64 bodies of the largest size. A body that is being read holds its bytes
 * for as long as its client takes to send them, so without this bound a few
 * thousand slow senders hold gigabytes.
 */
export const READING_BUDGET_BYTES = 64 * MIB;

/**
 * A project's share of READING_BUDGET_BYTES, all its keys together: 16 MiB,
 * so one project (one sender, or one attacker with a key) can hold at most a
 * quarter of it and every other project keeps being read. Counted per project,
 * not per key: a project can make keys at will, so a share per key is no bound.
 */
export const READING_PROJECT_BUDGET_BYTES = 16 * MIB;

/**
 * The keyless pool's part of the reading budget when none is set: an eighth
 * (8 MiB of the default 64 MiB). A body whose key is in the body (Segment's
 * `writeKey`) is read before anyone knows who sent it, so all such bodies
 * share this pool and only it: anyone can send them, and however many they
 * hold open, bodies with their key in a header still find the rest.
 */
export const READING_KEYLESS_PART = 1 / 8;

/**
 * One client address's share of the keyless pool: one body of the largest
 * size (a Segment SDK's batch is at most 500 KB), so filling the pool takes
 * eight addresses, not one.
 */
export const READING_ADDRESS_BUDGET_BYTES = MIB;

/** The keyless pool for a reading budget, when none is set: an eighth of it, and at least one body of the largest size. */
export function keylessPoolFor(budget: number): number {
  return Math.max(MIB, Math.floor(budget * READING_KEYLESS_PART));
}

/** Bytes reserved for one body being read. */
export interface Reservation {
  /** Takes `bytes` more (a chunked body as it arrives); null, or the budget it would pass (taking nothing). */
  grow(bytes: number): BudgetSpent | null;
  /** Gives everything back; later calls do nothing. */
  release(): void;
}

/**
 * Which budget a refused reservation would have passed: its project's share,
 * or the server's room for bodies with a key; for a body whose key is in the
 * body, its address's share or the keyless pool.
 */
export type BudgetSpent = 'project' | 'server' | 'address' | 'keyless';

/**
 * Whose share a body is read in: its key's project's (the key is checked
 * before the body is read), or, when the key is in the body, its client
 * address's within the keyless pool.
 */
export type ReadShare = { projectId: string } | { address: string };

/** One pool of the budget: bytes held, and by whom. */
class Pool {
  total = 0;
  readonly byOwner = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly ownerLimit: number,
    readonly spent: { owner: BudgetSpent; pool: BudgetSpent },
  ) {}

  take(owner: string, bytes: number): void {
    this.total += bytes;
    const left = (this.byOwner.get(owner) ?? 0) + bytes;
    if (left === 0) this.byOwner.delete(owner);
    else this.byOwner.set(owner, left);
  }
}

/**
 * Bodies being read, counted in bytes as sent: each request reserves its
 * declared Content-Length before a byte of its body is read (a chunked body
 * grows its reservation as it arrives), and gives it back once read, when
 * the body is weighed again by Admission. A reservation that does not fit is
 * refused, so the request can be answered before its body is read.
 *
 * The budget is two pools. Bodies whose key is in the body have the keyless
 * pool, shared by all of them, each client address within its share of it;
 * bodies whose key came in a header have the rest, each project (all its
 * keys together) within its share. Neither pool can take the other's room, so clients without a key
 * cannot hold up the ones with a key, however many addresses they send from.
 * A keyless pool of Infinity (set to 0) is no pool: keyless bodies then take
 * from the whole budget, each address within its share.
 */
export class ReadBudget {
  private total = 0;
  private readonly keyed: Pool;
  private readonly keyless: Pool;

  constructor(
    private readonly budget = READING_BUDGET_BYTES,
    projectBudget = READING_PROJECT_BUDGET_BYTES,
    keylessBudget = keylessPoolFor(budget),
    addressBudget = READING_ADDRESS_BUDGET_BYTES,
  ) {
    const pooled = Number.isFinite(keylessBudget);
    this.keyed = new Pool(pooled ? budget - keylessBudget : budget, projectBudget, { owner: 'project', pool: 'server' });
    this.keyless = new Pool(keylessBudget, addressBudget, { owner: 'address', pool: 'keyless' });
  }

  /** Reserves `bytes` for a body read in `share`, or says which budget it would pass. */
  reserve(share: ReadShare, bytes: number): Reservation | BudgetSpent {
    const [pool, owner] = 'projectId' in share ? [this.keyed, share.projectId] : [this.keyless, share.address];
    const spent = this.spent(pool, owner, bytes);
    if (spent !== null) return spent;
    this.take(pool, owner, bytes);
    let held = bytes;
    let released = false;
    return {
      grow: (more) => {
        const over = released ? 'server' : this.spent(pool, owner, more);
        if (over !== null) return over;
        this.take(pool, owner, more);
        held += more;
        return null;
      },
      release: () => {
        if (released) return;
        released = true;
        this.take(pool, owner, -held);
      },
    };
  }

  /** Bytes reserved by bodies being read (for metrics and tests). */
  get readingBytes(): number {
    return this.total;
  }

  /** Bytes reserved by bodies whose key is in the body (for tests). */
  get readingKeylessBytes(): number {
    return this.keyless.total;
  }

  /** Projects and client addresses with a body being read (for metrics and tests). */
  get readingOwners(): number {
    return this.keyed.byOwner.size + this.keyless.byOwner.size;
  }

  private spent(pool: Pool, owner: string, bytes: number): BudgetSpent | null {
    if ((pool.byOwner.get(owner) ?? 0) + bytes > pool.ownerLimit) return pool.spent.owner;
    if (pool.total + bytes > pool.limit) return pool.spent.pool;
    // Reached only without a keyless pool: then both kinds of body share the whole budget.
    if (this.total + bytes > this.budget) return 'server';
    return null;
  }

  private take(pool: Pool, owner: string, bytes: number): void {
    this.total += bytes;
    pool.take(owner, bytes);
  }
}
