/**
 * The scheduling priority of the calling thread alone. On Linux a thread is
 * a task of its own: setpriority on "this process" and sched_setscheduler on
 * its thread id set that thread, not the server. Elsewhere both would set the
 * whole process, so nothing is changed there.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** SCHED_IDLE's number in a task's stat line (its policy field). */
export const SCHED_IDLE = 5;

/** A task's scheduling, from its stat line (`/proc/<pid>/task/<tid>/stat`): its policy (0 normal, 5 idle) and nice value. */
export function taskSchedule(statPath = '/proc/thread-self/stat'): { policy: number; nice: number } {
  const stat = readFileSync(statPath, 'utf8');
  // The command name may hold spaces and parentheses; the fields after it do not. Nice is field 19 of
  // the line (16 after the name), the policy field 41 (38).
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { policy: Number(f[38]), nice: Number(f[16]) };
}

/** Sets the calling thread's nice value, on Linux only; where it is not allowed (a sandbox), the thread keeps the server's. */
export function lowerNice(nice: number): void {
  if (process.platform !== 'linux') return;
  try {
    setPriority(nice);
  } catch {
    // Not allowed here: the server's priority stays.
  }
}

/**
 * Runs the calling thread only on CPU time no other thread wants: nice 19
 * first, then Linux's idle class (SCHED_IDLE) through util-linux's `chrt`,
 * which Node cannot ask for itself. Nice 19 alone was not enough beside
 * ingestion: when the scheduler places a woken thread it counts a core
 * running a nice-19 thread as busy and one running only idle-class threads
 * as free (bench/README.md, "Destinations beside ingestion"). Without
 * `chrt`, or where it is refused, the nice value stays.
 */
export function lowestPriority(): void {
  if (process.platform !== 'linux') return;
  lowerNice(19);
  try {
    const tid = readlinkSync('/proc/thread-self').split('/').at(-1)!;
    execFileSync('chrt', ['--idle', '--pid', '0', tid], { stdio: 'ignore', timeout: 5_000 });
  } catch {
    // No chrt (a minimal image), or not allowed: the nice value stays.
  }
}
