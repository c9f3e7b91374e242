import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived the last full
 * collection before it collects again, in percent. Left to itself, V8 picks
 * a factor of up to 4 by how fast the program allocates, and a server under
 * load allocates fast: items outlive a scavenge while their commit is under
 * way, so they reach the old generation as garbage, which piled up to 90 MiB
 * over a live heap of about 25. With 100, a loaded server's peak RSS fell
 * from about 250 to 200 MiB at no measured cost. Since large bodies are
 * parsed on a check thread, the main thread makes less garbage and a tighter
 * cap costs less: 50 against 75 took 5 to 20 MiB off the peak for 3 to 6%
 * more CPU per event on big batches (docs/design.md, "Memory under load").
 */
export const HEAP_GROWING_PERCENT = 50;

/**
 * Applies HEAP_GROWING_PERCENT to this process, unless node was started
 * with a value of its own (`node --heap-growing-percent=N bin/inlet serve`).
 * V8 reads the flag at each full collection, so setting it after start
 * takes effect; NODE_OPTIONS may not carry it.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv, set: (flags: string) => void = setFlagsFromString): void {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a))) return;
  set(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
