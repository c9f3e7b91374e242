/**
 * The bound every engine puts on the reads behind console pages that scan
 * events (the chart of a project's days, a person's latest events). Such a
 * read may take a second on a large store; without a bound, tabs reloading a
 * page could queue any amount of it, and on PostgreSQL take every pooled
 * connection the write path needs (docs/production.md, "Console pages beside ingestion").
 */
import { StoreUnavailableError } from './port.js';

/** A page read refused because as many as the gate holds already wait: the page says so and asks for a reload. */
export class PageReadsBusyError extends StoreUnavailableError {
  constructor() {
    super('Too many page reads are waiting; reload the page in a moment.');
    this.name = 'PageReadsBusyError';
  }
}

interface Waiting {
  key: string;
  start: () => void;
  answer: Promise<unknown>;
}

/**
 * At most `running` reads at once and `waiting` more in line. A read asked
 * while an identical one (same key) waits shares its answer: two tabs
 * reloading one project's page cost one read.
 */
export class PageReadGate {
  private active = 0;
  private readonly line: Waiting[] = [];

  constructor(
    private readonly running: number,
    private readonly waiting: number,
  ) {}

  /** The answer of `read`, run in its turn; rejects with PageReadsBusyError when the line is full. */
  run<T>(key: string, read: () => Promise<T>): Promise<T> {
    const same = this.line.find((w) => w.key === key);
    if (same !== undefined) return same.answer as Promise<T>;
    if (this.active < this.running) {
      this.active++;
      return this.holding(read);
    }
    if (this.line.length >= this.waiting) return Promise.reject(new PageReadsBusyError());
    let start: () => void = () => undefined;
    const answer = new Promise<void>((resolve) => (start = resolve)).then(() => this.holding(read));
    this.line.push({ key, start, answer });
    return answer;
  }

  /** Reads running and waiting now (tests and metrics read it). */
  get size(): { running: number; waiting: number } {
    return { running: this.active, waiting: this.line.length };
  }

  /** Runs `read` in a place already counted, and hands the place to the next in line (or frees it). */
  private async holding<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } finally {
      const next = this.line.shift();
      if (next === undefined) this.active--;
      else next.start();
    }
  }
}
