/**
 * The recent answers of each source, in memory, for the console's live view:
 * what this server answered, item by item, while someone watches the source.
 * Bounded per source and in number of sources; nothing of it is written
 * anywhere or logged. It holds event names, ids and error messages, never
 * properties or traits.
 */

import type { ItemType } from './ingest/item.js';

/** One item of an answered request, as the live view shows it. */
export interface LiveItem {
  index: number;
  outcome: 'accepted' | 'duplicate' | 'dropped' | 'refused';
  type: ItemType | null;
  event: string | null;
  distinctId: string | null;
  personId: string | null;
  /** Item time, epoch ms (null when refused before it was read). */
  timestamp: number | null;
  /** Error code of a refused item, or the reason of a dropped one. */
  code: string | null;
  field: string | null;
  message: string | null;
}

/** One answered request of a source. */
export interface LiveRequest {
  requestId: string;
  /** Epoch ms of the answer. */
  at: number;
  /** HTTP status of the answer. */
  status: number;
  /** Items the request held (the window may keep fewer of them). */
  size: number;
  items: LiveItem[];
}

/** Items kept per source, newest requests first; older requests leave whole. */
export const ITEMS_PER_SOURCE = 500;
/** Sources kept; the one answered longest ago leaves first. */
export const MAX_SOURCES = 1000;
/**
 * How long a source stays watched after its page was shown or its last
 * stream ended: a page's script subscribes only after the page arrives, and a
 * reload ends one stream before the next begins; neither may lose requests.
 */
export const WATCH_LINGER_MS = 60_000;

type Listener = (r: LiveRequest) => void;

/** Each source's latest answered requests, and who is watching them. */
export class LiveWindow {
  private readonly windows = new Map<string, { requests: LiveRequest[]; items: number }>();
  private readonly listeners = new Map<string, Set<Listener>>();
  /** Epoch ms until which a source with no stream is still watched. */
  private readonly lingering = new Map<string, number>();

  constructor(
    private readonly itemsPerSource = ITEMS_PER_SOURCE,
    private readonly maxSources = MAX_SOURCES,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Whether the source's answers are wanted: it has a stream, or had one, or
   * its page was shown, within WATCH_LINGER_MS. Answers of other sources are
   * not recorded (building them is a cost on every request), and a source no
   * longer watched loses what was kept, so a page never shows a stale window
   * as if it were the latest.
   */
  watched(sourceId: string): boolean {
    if (this.listeners.has(sourceId)) return true;
    const until = this.lingering.get(sourceId);
    if (until === undefined) return false;
    if (until > this.clock()) return true;
    this.lingering.delete(sourceId);
    this.windows.delete(sourceId);
    return false;
  }

  /** The source's page is shown: its answers are recorded from now on, for a while. */
  show(sourceId: string): LiveRequest[] {
    // A window left from an earlier watch that has lapsed is not shown.
    this.watched(sourceId);
    this.linger(sourceId);
    return this.recent(sourceId);
  }

  /** Records a request's outcome and tells the source's watchers. Never throws into the caller. */
  publish(sourceId: string, request: LiveRequest): void {
    const kept = { ...request, items: request.items.slice(0, this.itemsPerSource) };
    let w = this.windows.get(sourceId);
    // Delete and set again: the Map's order is then the order of last use.
    if (w !== undefined) this.windows.delete(sourceId);
    w ??= { requests: [], items: 0 };
    this.windows.set(sourceId, w);
    w.requests.unshift(kept);
    w.items += kept.items.length;
    while (w.items > this.itemsPerSource && w.requests.length > 1) w.items -= w.requests.pop()!.items.length;
    while (this.windows.size > this.maxSources) this.windows.delete(this.windows.keys().next().value!);
    for (const l of this.listeners.get(sourceId) ?? []) {
      try {
        l(kept);
      } catch {
        // A watcher that fails (its connection gone) must not fail the answer.
      }
    }
  }

  /** The source's kept requests, newest first. */
  recent(sourceId: string): LiveRequest[] {
    return [...(this.windows.get(sourceId)?.requests ?? [])];
  }

  /** Calls `listener` with every request published for the source from now on; returns the way to stop. */
  subscribe(sourceId: string, listener: Listener): () => void {
    let set = this.listeners.get(sourceId);
    if (set === undefined) this.listeners.set(sourceId, (set = new Set()));
    set.add(listener);
    this.lingering.delete(sourceId);
    return () => {
      if (!set.delete(listener) || set.size > 0) return;
      this.listeners.delete(sourceId);
      this.linger(sourceId);
    };
  }

  private linger(sourceId: string): void {
    // Delete and set again: the Map's order is then the order of last use.
    this.lingering.delete(sourceId);
    this.lingering.set(sourceId, this.clock() + WATCH_LINGER_MS);
    while (this.lingering.size > this.maxSources) this.lingering.delete(this.lingering.keys().next().value!);
  }

  /** Sources kept now (for tests of the bound). */
  get size(): number {
    return this.windows.size;
  }
}
