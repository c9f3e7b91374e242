import type { IncomingHttpHeaders } from 'node:http';
import { MAX_BODY_BYTES } from './read-body.js';

/**
 * Bodies being parsed, checked or waiting for their commit, counted in bytes
 * of JSON. A parsed batch takes ten times or more its JSON in memory and
 * waits for a commit that takes about 1,000 items at a time, so past a few
 * commits' worth, admitting more only adds memory, garbage collection and
 * latency. 2 MiB is about twenty 500-item batches, or thousands of small
 * requests (group commit needs those).
 */
export const BODY_BUDGET_BYTES = 2 * 1_048_576;

/** How long a request may wait for room before it is answered 503. */
export const ADMISSION_WAIT_MS = 10_000;

/** What a body of unknown length (chunked) counts for until it is read. */
const UNKNOWN_LENGTH_BYTES = 65_536;

/** JSON compresses about this much with gzip; the body counts as its JSON. */
const GZIP_RATIO = 6;

/**
 * Back-pressure before a body is read: a request past its header checks
 * waits, first come first served, until the bodies already admitted leave
 * room for its own. Meanwhile its body stays in the socket, so a burst past
 * what the store can commit costs a socket each, not a parsed batch each. A
 * request that waits longer than `maxWaitMs` is told to come back (503), and
 * one body larger than the whole budget is admitted when nothing else is in.
 */
export class Admission {
  private inFlight = 0;
  private readonly waiting: { weight: number; admit: () => void }[] = [];

  constructor(
    private readonly budget = BODY_BUDGET_BYTES,
    private readonly maxWaitMs = ADMISSION_WAIT_MS,
  ) {}

  /** Resolves to a release function once admitted, or null after waiting too long. */
  async enter(weight: number): Promise<(() => void) | null> {
    if (this.waiting.length === 0 && this.fits(weight)) return this.admit(weight);
    return new Promise((resolve) => {
      const entry = {
        weight,
        admit: () => {
          clearTimeout(timer);
          resolve(this.admit(weight));
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(entry), 1);
        resolve(null);
        // The one given up on may have held back smaller ones behind it.
        this.admitWaiting();
      }, this.maxWaitMs);
      this.waiting.push(entry);
    });
  }

  /** Bytes admitted and not yet released (for tests and logs). */
  get admittedBytes(): number {
    return this.inFlight;
  }

  private fits(weight: number): boolean {
    return this.inFlight === 0 || this.inFlight + weight <= this.budget;
  }

  private admit(weight: number): () => void {
    this.inFlight += weight;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight -= weight;
      this.admitWaiting();
    };
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.weight)) this.waiting.shift()!.admit();
  }
}

/** What a request's body counts for, from its headers alone. */
export function bodyWeight(headers: IncomingHttpHeaders): number {
  const declared = Number(headers['content-length']);
  const sent = Number.isFinite(declared) && headers['content-length'] !== undefined ? declared : UNKNOWN_LENGTH_BYTES;
  const gzipped = (headers['content-encoding'] ?? '').toLowerCase().includes('gzip');
  return Math.min(MAX_BODY_BYTES, gzipped ? sent * GZIP_RATIO : sent);
}
