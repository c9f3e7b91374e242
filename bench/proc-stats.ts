import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

const TICKS = clockTicks();

/** The fields of a stat line (`/proc/<pid>/stat`, or a task's) after the command name, which may hold spaces and parentheses. */
const statFields = (path: string): string[] => {
  const stat = readFileSync(path, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};
/** User plus system CPU seconds of a stat line's fields: utime and stime, fields 14 and 15 of the whole line, 12 and 13 after the name. */
const cpuOf = (f: string[]): number => (Number(f[11]) + Number(f[12])) / TICKS;

/**
 * A process and every process under it that still runs (Linux /proc): a
 * server and its delivery process, whose CPU is the server's too.
 */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const tid of readdirSync(`/proc/${out[i]}/task`)) {
        out.push(...readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
      }
    } catch {
      // Ended while listed.
    }
  }
  return out;
}

/** User plus system CPU seconds a process, with the processes under it, has used so far (Linux /proc). */
export function cpuSeconds(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += cpuOf(statFields(`/proc/${p}/stat`));
    } catch {
      // A process under it that ended while listed (the server's own stat is always there while it runs).
    }
  }
  return sum;
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]);
}

/** A thread's CPU so far: user plus system seconds, and its nice value (19 for the delivery process's). */
export interface ThreadCpu {
  seconds: number;
  nice: number;
}

/** Each thread of a process and of the processes under it, by thread id: its CPU seconds so far and nice value (Linux /proc). */
export function threadCpu(pid: number): Map<string, ThreadCpu> {
  const out = new Map<string, ThreadCpu>();
  for (const p of processTree(pid)) {
    try {
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        try {
          const f = statFields(`/proc/${p}/task/${tid}/stat`);
          out.set(tid, { seconds: cpuOf(f), nice: Number(f[16]) });
        } catch {
          // A thread that ended while listed.
        }
      }
    } catch {
      // A process under it that ended while listed.
    }
  }
  return out;
}

/** Each thread's CPU seconds between two readings of threadCpu, with its nice value. */
function threadDeltas(before: Map<string, ThreadCpu>, after: Map<string, ThreadCpu>): { nice: number; s: number }[] {
  return [...after].map(([tid, t]) => ({ nice: t.nice, s: t.seconds - (before.get(tid)?.seconds ?? 0) }));
}

const secondsOf = (threads: { s: number }[]): number => threads.reduce((a, u) => a + u.s, 0);

/** CPU seconds of the busiest normal-priority thread between two readings of threadCpu (0 when none is seen). */
export function busiestThreadSeconds(before: Map<string, ThreadCpu>, after: Map<string, ThreadCpu>): number {
  return Math.max(0, ...threadDeltas(before, after).filter((u) => u.nice <= 0).map((u) => u.s));
}

/**
 * Where a process's CPU went between two readings, per event: the busiest
 * thread (the one that answers requests), the lowered threads (nice > 0:
 * the delivery process, V8's helpers there included), and the rest (check
 * threads, the server's V8 helpers, checkpoints), in µs.
 */
export function threadShares(before: Map<string, ThreadCpu>, after: Map<string, ThreadCpu>, events: number): { busiest: number; lowered: number; rest: number } {
  const used = threadDeltas(before, after);
  const busiest = busiestThreadSeconds(before, after);
  const us = (s: number) => (s / events) * 1e6;
  return {
    busiest: us(busiest),
    lowered: us(secondsOf(used.filter((u) => u.nice > 0))),
    rest: us(secondsOf(used.filter((u) => u.nice <= 0)) - busiest),
  };
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
    return peak / 1024;
  }

  /** The peak over the whole life of the process, in MiB. */
  lifetimePeakMiB(): number {
    try {
      return statusKiB(this.pid, 'VmHWM') / 1024;
    } catch {
      return 0;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function cpuTimes(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user, nice and system: the time processes are charged with. Interrupts
  // (loopback traffic is handled there) and steal are charged to no process,
  // so counting them would show the benchmark's own traffic as someone else's.
  const busy = (v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy, total };
}

/**
 * The share of all CPUs busy over the next `ms`: the load average lags by
 * minutes, and other work on the machine moves every figure of the run.
 */
export async function machineBusyShare(ms = 1000): Promise<number> {
  const a = cpuTimes();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuTimes();
  return b.total === a.total ? 0 : (b.busy - a.busy) / (b.total - a.total);
}

/** CPU seconds spent so far by the whole machine, all processes together. */
export function machineBusySeconds(): number {
  return cpuTimes().busy / TICKS;
}

/**
 * CPU seconds used so far by PostgreSQL on this machine: every process named
 * `postgres`, with the CPU of the backends that have ended (the postmaster
 * has reaped them into its own children's times), so a difference over a
 * phase counts connections that came and went. It counts every database of
 * that server, other work on it included. Zero when no such process is
 * visible (PostgreSQL on another machine).
 */
export function postgresCpuSeconds(): number {
  let ticks = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    if (stat.slice(open + 1, close) !== 'postgres') continue;
    const f = stat.slice(close + 2).split(' ');
    // utime, stime, cutime, cstime: fields 14 to 17 of the line, 12 to 15 after the name.
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return ticks / TICKS;
}

/** Whether PostgreSQL's processes are visible here, so that its CPU can be counted. */
export function postgresVisible(): boolean {
  return postgresCpuSeconds() > 0;
}
