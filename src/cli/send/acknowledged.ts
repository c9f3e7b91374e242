/**
 * Which lines of the input have their final outcome. Items settle out of
 * order (two requests in flight, retries), so what a resumed send may skip is
 * the prefix of lines that all have one: `line` and `offset` say where it
 * ends. A failed item never settles, so the prefix stops before it.
 */
export class Acknowledged {
  /** Lines read past the prefix, in order from `base`: where each ends, and whether it has settled. */
  private ends: number[] = [];
  private done: boolean[] = [];
  private head = 0;
  private base: number;

  /** The prefix starts after `line`, which ends at `offset` (0, 0 for the start of the file). */
  constructor(
    public line = 0,
    public offset = 0,
  ) {
    this.base = line + 1;
  }

  /** Line `line` (the next one) was read; it ends at byte `end`. */
  read(line: number, end: number): void {
    if (line !== this.base + this.ends.length) throw new Error(`line ${line} read out of order`);
    this.ends.push(end);
    this.done.push(false);
  }

  /** Line `line` has its final outcome. */
  settle(line: number): void {
    const i = line - this.base;
    if (i < this.head || i >= this.done.length) return;
    this.done[i] = true;
    while (this.head < this.done.length && this.done[this.head]) {
      this.line = this.base + this.head;
      this.offset = this.ends[this.head]!;
      this.head++;
    }
    // Compact once the settled prefix dominates, so memory follows the lines in flight.
    if (this.head > 1024 && this.head * 2 > this.done.length) {
      this.ends = this.ends.slice(this.head);
      this.done = this.done.slice(this.head);
      this.base += this.head;
      this.head = 0;
    }
  }
}
