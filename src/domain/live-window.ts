/**
 * The recent answers of each source, in memory, for the console's live view:
 * what this server answered, item by item, while someone watches the source.
 * Bounded per source in lines and in bytes, in number of sources and in
 * bytes in all; nothing of it is written anywhere or logged. It holds event names, ids and error messages, never
 * properties or traits.
 */

import { cutText } from './echo.js';
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
 * Bytes a source's kept lines may take once shown (HTML in a JSON event, at
 * most; see lineBytes), newest requests first; older requests leave whole, and
 * a request larger alone keeps its first lines. Well under a live view's
 * stream buffer (1 MiB), so one request's event always fits in it, and the
 * source page stays under it; a 500-item request's lines (about 170 KB as
 * sent, about 300 KB as counted here; 220 and 360 KB when each is refused)
 * stay whole.
 */
export const BYTES_PER_SOURCE = 512 * 1024;
/** Bytes the kept lines of all sources may take; the source answered longest ago leaves first. */
export const BYTES_IN_ALL = 32 * 1024 * 1024;
/**
 * What a line keeps of each text, in code points: an error's field and
 * message are already cut where they are made (domain/echo.ts); this bounds
 * a line whatever reaches it.
 */
const TEXT_KEPT = { event: 128, distinctId: 128, personId: 64, code: 64, field: 256, message: 512 } as const;
/** What a line's markup and times add to its texts once shown, at most (console/views/source.ts, liveLine). */
const LINE_MARKUP_BYTES = 512;
/**
 * How long a source stays watched after its page was shown or its last
 * stream ended: a page's script subscribes only after the page arrives, and a
 * reload ends one stream before the next begins; neither may lose requests.
 */
export const WATCH_LINGER_MS = 60_000;

type Listener = (r: LiveRequest) => void;

interface SourceWindow {
  /** Newest first, each with the bytes its lines count for. */
  requests: { request: LiveRequest; bytes: number }[];
  items: number;
  bytes: number;
}

/** Each source's latest answered requests, and who is watching them. */
export class LiveWindow {
  private readonly windows = new Map<string, SourceWindow>();
  /** Bytes of every source's kept lines. */
  private bytesKept = 0;
  private readonly listeners = new Map<string, Set<Listener>>();
  /** Epoch ms until which a source with no stream is still watched. */
  private readonly lingering = new Map<string, number>();

  constructor(
    private readonly itemsPerSource = ITEMS_PER_SOURCE,
    private readonly maxSources = MAX_SOURCES,
    private readonly clock: () => number = Date.now,
    private readonly bytesPerSource = BYTES_PER_SOURCE,
    private readonly bytesInAll = BYTES_IN_ALL,
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
    this.forget(sourceId);
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
    const { kept, bytes } = this.cut(request);
    let w = this.windows.get(sourceId);
    // Delete and set again: the Map's order is then the order of last use.
    if (w !== undefined) this.windows.delete(sourceId);
    w ??= { requests: [], items: 0, bytes: 0 };
    this.windows.set(sourceId, w);
    w.requests.unshift({ request: kept, bytes });
    w.items += kept.items.length;
    w.bytes += bytes;
    this.bytesKept += bytes;
    while ((w.items > this.itemsPerSource || w.bytes > this.bytesPerSource) && w.requests.length > 1) {
      const old = w.requests.pop()!;
      w.items -= old.request.items.length;
      w.bytes -= old.bytes;
      this.bytesKept -= old.bytes;
    }
    // This source is the last in order and within bytesPerSource, so it never leaves here.
    while (this.windows.size > this.maxSources || (this.bytesKept > this.bytesInAll && this.windows.size > 1)) {
      this.forget(this.windows.keys().next().value!);
    }
    for (const l of this.listeners.get(sourceId) ?? []) {
      try {
        l(kept);
      } catch {
        // A watcher that fails (its connection gone) must not fail the answer.
      }
    }
  }

  /** The request as kept: its first lines within both of a source's bounds, each line's texts cut. */
  private cut(request: LiveRequest): { kept: LiveRequest; bytes: number } {
    const items: LiveItem[] = [];
    let bytes = 0;
    for (const item of request.items) {
      if (items.length === this.itemsPerSource) break;
      const line = cutLine(item);
      const b = lineBytes(request, line);
      // The first line is kept whatever it weighs: cut, it is at most a few KB.
      if (items.length > 0 && bytes + b > this.bytesPerSource) break;
      items.push(line);
      bytes += b;
    }
    return { kept: { ...request, items }, bytes };
  }

  private forget(sourceId: string): void {
    const w = this.windows.get(sourceId);
    if (w === undefined) return;
    this.bytesKept -= w.bytes;
    this.windows.delete(sourceId);
  }

  /** The source's kept requests, newest first. */
  recent(sourceId: string): LiveRequest[] {
    return (this.windows.get(sourceId)?.requests ?? []).map((r) => r.request);
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

  /** Bytes the kept lines of all sources count for now (for tests of the bound). */
  get bytes(): number {
    return this.bytesKept;
  }
}

function cutLine(i: LiveItem): LiveItem {
  const cut = (s: string | null, max: number): string | null => (s === null ? null : cutText(s, max));
  return {
    ...i,
    event: cut(i.event, TEXT_KEPT.event),
    distinctId: cut(i.distinctId, TEXT_KEPT.distinctId),
    personId: cut(i.personId, TEXT_KEPT.personId),
    code: cut(i.code, TEXT_KEPT.code),
    field: cut(i.field, TEXT_KEPT.field),
    message: cut(i.message, TEXT_KEPT.message),
  };
}

/** The most bytes a line can take once shown: its markup, and each text escaped for HTML then JSON, as UTF-8. */
export function lineBytes(r: LiveRequest, i: LiveItem): number {
  return LINE_MARKUP_BYTES + shownBytes(r.requestId) + shownBytes(i.event) + shownBytes(i.distinctId)
    + shownBytes(i.personId) + shownBytes(i.code) + shownBytes(i.field) + shownBytes(i.message);
}

function shownBytes(s: string | null): number {
  if (s === null) return 0;
  let n = 0;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    // An HTML entity (&quot; the longest), a JSON \u escape or a lone surrogate's, at most 6;
    // a surrogate pair is 4 bytes of UTF-8, counted 6 each all the same.
    if (c < 0x20 || c === 0x22 || c === 0x26 || c === 0x27 || c === 0x3c || c === 0x3e || (c >= 0xd800 && c <= 0xdfff)) n += 6;
    else if (c === 0x5c) n += 2;
    else if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else n += 3;
  }
  return n;
}
