import type { EventCursor, EventPages, StoredEvent } from '../stores/port.js';

/** Events read from the store at a time, per source. */
export const EXPORT_PAGE_SIZE = 1000;

/** One source's events, oldest first, a page at a time. */
class SourceStream {
  private page: StoredEvent[] = [];
  private at = 0;
  private next: EventCursor | null = null;
  private done = false;

  constructor(
    private readonly pages: EventPages,
    private readonly sourceId: string,
    private readonly range: { since?: number; until?: number },
    private readonly pageSize: number,
  ) {}

  /** The next event without taking it; null once the source has none left. */
  async peek(): Promise<StoredEvent | null> {
    while (this.at >= this.page.length) {
      if (this.done) return null;
      const p = await this.pages.eventPage({ sourceId: this.sourceId, order: 'asc', after: this.next, ...this.range, limit: this.pageSize });
      this.page = p.events;
      this.at = 0;
      this.next = p.next;
      this.done = p.next === null;
    }
    return this.page[this.at]!;
  }

  take(): void {
    this.at++;
  }
}

/**
 * Every event of the sources with a timestamp in [since, until), oldest first
 * (ties in source order), read a page per source at a time: memory stays the
 * same whatever the number of events. A caller that writes them out should
 * wait for its stream to drain, so nothing piles up on that side either.
 */
export async function* exportEvents(
  pages: EventPages,
  sourceIds: string[],
  range: { since?: number; until?: number } = {},
  pageSize = EXPORT_PAGE_SIZE,
): AsyncGenerator<StoredEvent> {
  const streams = sourceIds.map((id) => new SourceStream(pages, id, range, pageSize));
  for (;;) {
    let best: { stream: SourceStream; event: StoredEvent } | null = null;
    for (const stream of streams) {
      const event = await stream.peek();
      if (event !== null && (best === null || event.timestamp < best.event.timestamp)) best = { stream, event };
    }
    if (best === null) return;
    best.stream.take();
    yield best.event;
  }
}
