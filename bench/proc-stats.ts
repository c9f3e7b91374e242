import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MiB = 1024 * 1024;

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

const TICKS = clockTicks();

/** User plus system CPU seconds a process has used so far (Linux /proc). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces and parentheses; the fields after it do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]);
}

/**
 * Samples a process's resident memory every 100 ms. VmHWM (the kernel's own
 * high-water mark) covers the whole life of the process; the samples give the
 * peak of each phase.
 */
export class RssWatch {
  private phasePeak = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 100).unref();
    this.sample();
  }

  private sample(): void {
    try {
      this.phasePeak = Math.max(this.phasePeak, statusKiB(this.pid, 'VmRSS'));
    } catch {
      // The process is gone; the last peak stands.
    }
  }

  /** The peak since the last call, in MiB, and starts a new phase. */
  takePhasePeakMiB(): number {
    this.sample();
    const peak = this.phasePeak;
    this.phasePeak = 0;
    return (peak * 1024) / MiB;
  }

  /** The peak over the whole life of the process, in MiB. */
  lifetimePeakMiB(): number {
    try {
      return (statusKiB(this.pid, 'VmHWM') * 1024) / MiB;
    } catch {
      return 0;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
