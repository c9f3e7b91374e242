import {
  type EventOutcomeCount, type KeptSample, OTHER_EVENTS, type Outcome, type OutcomeCount, type OutcomeStore, type SampleBounds, sampleBytes,
} from '../../stores/port-outcomes.js';

/** How often counts and samples are written: "at most a second behind" with room for the write itself. */
export const OUTCOME_FLUSH_MS = 500;
/**
 * How soon after a request that refused or dropped items its counts are
 * written: at once when no write started this long ago, else this long after
 * the last one started. What a crash (SIGKILL) can lose of them is this
 * window and the write under way; the cost is at most one small write per
 * window, and none while every item is accepted.
 */
export const REFUSAL_WRITE_MS = 100;
/** Samples kept per source and code, at the least (while the project's bytes allow). */
export const SAMPLES_PER_CODE = 100;
/** Bytes of samples a project may hold, everything each stores counted (sampleBytes); the oldest go past it. */
export const SAMPLE_BYTES_PER_PROJECT = 32 * 1024 * 1024;
/**
 * Distinct events a source's hour counts a tracking plan's warned and refused
 * items under; the rest of that hour's go under OTHER_EVENTS, so that a
 * sender naming ever new events cannot grow what is stored without bound.
 */
export const PLAN_EVENTS_PER_HOUR = 100;
/** Bytes of samples one server holds between two writes, whatever arrives (a flood of 1 MiB invalid items). */
export const PENDING_SAMPLE_BYTES = 8 * 1024 * 1024;

/** What one request's items became, as an intake answered them: counts by outcome and code. */
export interface ItemCounts {
  accepted: number;
  duplicate: number;
  dropped: ReadonlyMap<string, number>;
  refused: ReadonlyMap<string, number>;
}

/** An item refused or dropped, as the intake saw it: what a sample is made of. */
export type SampleInput = Omit<KeptSample, 'projectId' | 'sourceId' | 'receivedAt' | 'requestId'>;

/**
 * What an intake tells the ledger once it has answered a request that was
 * not a dry run (OutcomeLedger.record): the request's source, its arrival,
 * the counts of its items, and the items it refused or dropped.
 */
export interface IntakeAnswer {
  projectId: string;
  sourceId: string;
  requestId: string;
  /** Epoch ms: the minute it is counted in. */
  receivedAt: number;
  counts: ItemCounts;
  samples: SampleInput[];
}

export interface LedgerOptions {
  flushMs?: number;
  /** REFUSAL_WRITE_MS unless given. */
  soonMs?: number;
  bounds?: Partial<SampleBounds>;
  pendingBytes?: number;
  /** PLAN_EVENTS_PER_HOUR unless given. */
  eventsPerHour?: number;
  /** Told of a write that failed; what it held waits for the next one. */
  onError?: (e: unknown) => void;
}

/**
 * What became of every item (docs/design.md, "What became of every item"):
 * counts per source, minute, outcome and code, and the refused and dropped
 * items kept as samples. An intake calls `record` once per answered request;
 * a request costs a map increment per outcome and code it had, and nothing
 * waits on the store: counts and samples are written together within
 * REFUSAL_WRITE_MS of the request that had them, every OUTCOME_FLUSH_MS if
 * anything is left, and on `stop` (SIGTERM). What a write that failed held is
 * added back, so it goes with the next one.
 */
export class OutcomeLedger {
  private counts = new Map<string, OutcomeCount>();
  /** A plan's counts by event waiting, by source, hour, outcome, code and event. */
  private events = new Map<string, EventOutcomeCount>();
  /** The events waiting of each source's hour: past eventsPerHour, counted under OTHER_EVENTS (the store holds its rows to the same). */
  private eventNames = new Map<string, Set<string>>();
  /** Samples waiting, by source and code, oldest first: only the newest SAMPLES_PER_CODE of each can stay. */
  private samples = new Map<string, KeptSample[]>();
  private waitingBytes = 0;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  /** The write asked for by the last request that had something to count; null when none waits. */
  private soonTimer: NodeJS.Timeout | null = null;
  /** performance.now() when the last write started. */
  private lastWrite = -Infinity;
  private readonly bounds: SampleBounds;
  private readonly pendingBytes: number;
  private readonly eventsPerHour: number;

  constructor(
    private readonly store: OutcomeStore,
    private readonly opts: LedgerOptions = {},
  ) {
    this.bounds = { keepPerCode: opts.bounds?.keepPerCode ?? SAMPLES_PER_CODE, projectBytes: opts.bounds?.projectBytes ?? SAMPLE_BYTES_PER_PROJECT };
    this.pendingBytes = opts.pendingBytes ?? PENDING_SAMPLE_BYTES;
    this.eventsPerHour = opts.eventsPerHour ?? PLAN_EVENTS_PER_HOUR;
    this.timer = setInterval(() => void this.flush(), opts.flushMs ?? OUTCOME_FLUSH_MS).unref();
  }

  /** Bytes of samples waiting to be written: bounded by PENDING_SAMPLE_BYTES whatever arrives. */
  get pendingSampleBytes(): number {
    return this.waitingBytes;
  }

  /** One answered request (never a dry run): its counts, and samples of what it refused or dropped. */
  record(a: IntakeAnswer): void {
    const { projectId, sourceId, receivedAt: at, counts: c } = a;
    if (c.accepted > 0) this.add(projectId, sourceId, at, 'accepted', '', c.accepted);
    if (c.duplicate > 0) this.add(projectId, sourceId, at, 'duplicate', '', c.duplicate);
    for (const [code, n] of c.dropped) this.add(projectId, sourceId, at, 'dropped', code, n);
    for (const [code, n] of c.refused) this.add(projectId, sourceId, at, 'refused', code, n);
    for (const s of a.samples) this.keep({ ...s, projectId, sourceId, receivedAt: at, requestId: a.requestId });
    // A request whose items were all written (their counts with them) asks for no write.
    if (c.accepted + c.duplicate + c.dropped.size + c.refused.size + a.samples.length > 0) this.soon();
  }

  /** Adds `n` items of one outcome and code to the source's minute. */
  count(projectId: string, sourceId: string, at: number, outcome: Outcome, code: string, n: number): void {
    this.add(projectId, sourceId, at, outcome, code, n);
    this.soon();
  }

  /** Adds `n` items a tracking plan warned or refused under one code to the source's hour, by event (OTHER_EVENTS past the hour's cap). */
  countEvent(projectId: string, sourceId: string, at: number, outcome: 'refused' | 'warned', code: string, event: string, n: number): void {
    this.addEvent({ projectId, sourceId, hour: at - (at % 3_600_000), outcome, code, event, count: n });
    this.soon();
  }

  private addEvent(e: EventOutcomeCount): void {
    const hourKey = `${e.sourceId}\n${e.hour}`;
    let names = this.eventNames.get(hourKey);
    if (names === undefined) this.eventNames.set(hourKey, (names = new Set()));
    let event = e.event;
    if (event !== OTHER_EVENTS && !names.has(event)) {
      if (names.size < this.eventsPerHour) names.add(event);
      else event = OTHER_EVENTS;
    }
    const key = `${hourKey}\n${e.outcome}\n${e.code}\n${event}`;
    const c = this.events.get(key);
    if (c !== undefined) c.count += e.count;
    else this.events.set(key, { ...e, event });
  }

  /** Writes what waits within REFUSAL_WRITE_MS: one write for every request in that window. */
  private soon(): void {
    if (this.soonTimer !== null) return;
    const wait = Math.max(0, this.lastWrite + (this.opts.soonMs ?? REFUSAL_WRITE_MS) - performance.now());
    this.soonTimer = setTimeout(() => {
      this.soonTimer = null;
      void this.flush();
    }, wait).unref();
  }

  private add(projectId: string, sourceId: string, at: number, outcome: Outcome, code: string, n: number): void {
    const minute = at - (at % 60_000);
    const key = `${sourceId}\n${minute}\n${outcome}\n${code}`;
    const c = this.counts.get(key);
    if (c !== undefined) c.count += n;
    else this.counts.set(key, { projectId, sourceId, minute, outcome, code, count: n });
  }

  /** Writes what was recorded since the last write. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (this.soonTimer !== null) clearTimeout(this.soonTimer);
    this.soonTimer = null;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.counts.size === 0 && this.samples.size === 0 && this.events.size === 0) return;
    this.lastWrite = performance.now();
    const counts = this.counts;
    const samples = this.samples;
    const events = this.events;
    this.counts = new Map();
    this.samples = new Map();
    this.events = new Map();
    this.eventNames = new Map();
    this.waitingBytes = 0;
    const kept = [...samples.values()].flat();
    try {
      await this.store.addOutcomes([...counts.values()], kept, this.bounds, events.size === 0 ? undefined : { rows: [...events.values()], perHour: this.eventsPerHour });
    } catch (e) {
      // Added back for the next write on the timer: a store that is down is not asked again at once.
      for (const c of counts.values()) this.add(c.projectId, c.sourceId, c.minute, c.outcome, c.code, c.count);
      for (const c of events.values()) this.addEvent(c);
      for (const s of kept) this.keep(s);
      this.opts.onError?.(e);
    }
  }

  private keep(s: KeptSample): void {
    const key = `${s.sourceId}\n${s.code}`;
    let list = this.samples.get(key);
    if (list === undefined) this.samples.set(key, (list = []));
    list.push(s);
    this.waitingBytes += sampleBytes(s);
    // Only the newest of a code would stay once written: older ones waiting need not be.
    if (list.length > this.bounds.keepPerCode) this.waitingBytes -= sampleBytes(list.shift()!);
    while (this.waitingBytes > this.pendingBytes && list.length > 1) this.waitingBytes -= sampleBytes(list.shift()!);
    if (this.waitingBytes > this.pendingBytes) {
      // Other codes hold the room: this one waits for the next request of its code.
      this.waitingBytes -= sampleBytes(list.pop()!);
      if (list.length === 0) this.samples.delete(key);
    }
  }
}
