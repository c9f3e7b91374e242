import type { RateLimitWindow } from '@inlet/node';
import cliProgress from 'cli-progress';
import { formatCount } from '../numbers.js';
import type { Stderr } from './problems.js';

/** Where a send stands, as the progress bar shows it. */
export interface SendPosition {
  /** Bytes of the file whose lines all have their outcome (the resume point). */
  acknowledged: number;
  /** Bytes read so far, and the lines (items or not) they held. */
  read: number;
  linesRead: number;
  /** Lines of this run with their outcome (an item's, or none for a blank or unreadable line). */
  settled: number;
  /** The project's windows as the server last stated them. */
  limits: RateLimitWindow[];
}

/** Progress of `inlet send` on stderr; does nothing unless stderr is a terminal. */
export interface SendProgress {
  update(at: SendPosition): void;
  stop(at: SendPosition): void;
}

const quiet: SendProgress = { update: () => {}, stop: () => {} };

/**
 * A bar over the file's bytes acknowledged by the server (not merely read)
 * when its size is known (stdin has none), with lines done, lines per second
 * and the time that remains at the server's pace.
 */
export function startProgress(totalBytes: number | null, startOffset: number, stderr: Stderr): SendProgress {
  if (!isTerminal(stderr)) return quiet;
  const started = Date.now();
  const known = totalBytes !== null && totalBytes > 0;
  const bar = new cliProgress.SingleBar(
    {
      stream: stderr,
      format: known ? '{bar} {percentage}% | {lines} lines | {rate} lines/s | {left} left' : '{lines} lines | {rate} lines/s',
      hideCursor: true,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(known ? totalBytes : 1, known ? startOffset : 0, { lines: 0, rate: 0, left: '?' });
  const payload = (at: SendPosition) => {
    const seconds = Math.max(0.001, (Date.now() - started) / 1000);
    const left = known ? secondsLeft(totalBytes, startOffset, at, seconds) : null;
    return { lines: formatCount(at.settled), rate: formatCount(Math.round(at.settled / seconds)), left: left === null ? '?' : duration(left) };
  };
  return {
    update: (at) => bar.update(known ? at.acknowledged : 0, payload(at)),
    stop: (at) => {
      bar.update(known ? at.acknowledged : 0, payload(at));
      bar.stop();
    },
  };
}

/**
 * The time left: the lines not done yet (those read, and the rest of the
 * file at the bytes per line so far) at the pace the server has answered so
 * far, and never less than its windows need to take them: past the room a
 * window states, items go at its quota per window length.
 */
export function secondsLeft(totalBytes: number, startOffset: number, at: SendPosition, elapsedSeconds: number): number | null {
  const readSoFar = at.read - startOffset;
  if (at.settled === 0 || at.linesRead === 0 || readSoFar <= 0) return null;
  const linesLeft = Math.max(0, at.linesRead - at.settled) + ((totalBytes - at.read) * at.linesRead) / readSoFar;
  let left = linesLeft / (at.settled / elapsedSeconds);
  for (const w of at.limits) {
    if (w.quota === null || w.windowMs === null || w.quota <= 0) continue;
    const beyondRoom = linesLeft - Math.max(0, w.room);
    if (beyondRoom > 0) left = Math.max(left, (w.room > 0 ? 0 : w.resetMs / 1000) + (beyondRoom * w.windowMs) / w.quota / 1000);
  }
  return left;
}

function duration(seconds: number): string {
  const s = Math.ceil(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** A terminal's stderr is a stream the bar can redraw on. */
function isTerminal(stderr: Stderr): stderr is Stderr & NodeJS.WritableStream {
  return stderr.isTTY === true;
}
