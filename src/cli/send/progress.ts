import cliProgress from 'cli-progress';
import { formatCount } from '../numbers.js';

/** Progress of `inlet send` on stderr; does nothing unless stderr is a terminal. */
export interface SendProgress {
  update(bytesRead: number, items: number): void;
  stop(bytesRead: number, items: number): void;
}

const quiet: SendProgress = { update: () => {}, stop: () => {} };

/**
 * A bar over the file's bytes when its size is known (stdin has none), with
 * items sent, items per second and the time that remains.
 */
export function startProgress(totalBytes: number | null, stderr: { isTTY?: boolean }): SendProgress {
  if (!stderr.isTTY) return quiet;
  const started = Date.now();
  const known = totalBytes !== null && totalBytes > 0;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: known ? '{bar} {percentage}% | {items} items | {rate} items/s | {left} left' : '{items} items | {rate} items/s',
      hideCursor: true,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(known ? totalBytes : 1, 0, { items: 0, rate: 0, left: '?' });
  const payload = (bytes: number, items: number) => {
    const seconds = Math.max(0.001, (Date.now() - started) / 1000);
    // What remains, at the pace so far: the bytes left over the bytes read per second.
    const left = known && bytes > 0 ? duration(((totalBytes - bytes) * seconds) / bytes) : '?';
    return { items: formatCount(items), rate: formatCount(Math.round(items / seconds)), left };
  };
  return {
    update: (bytes, items) => bar.update(known ? bytes : 0, payload(bytes, items)),
    stop: (bytes, items) => {
      bar.update(known ? bytes : 0, payload(bytes, items));
      bar.stop();
    },
  };
}

function duration(seconds: number): string {
  const s = Math.ceil(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
