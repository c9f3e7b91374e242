/**
 * The scheduling priority of the calling thread alone. On Linux a thread is
 * a task of its own: setpriority on "this process" and sched_setscheduler on
 * its thread id set that thread, not the server. Elsewhere both would set the
 * whole process, so nothing is changed there.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** What a thread got: Linux's idle class, a nice value, or nothing (not Linux, or not allowed). */
export type ThreadPriority = 'idle' | 'nice' | 'unchanged';

/** SCHED_IDLE's number in /proc/<pid>/task/<tid>/stat (field 41, the policy). */
const SCHED_IDLE = 5;

/** The calling thread's id, from /proc/thread-self (a link to `<pid>/task/<tid>`). */
function threadId(): string {
  return readlinkSync('/proc/thread-self').split('/').at(-1)!;
}

/** The scheduling policy of the calling thread (0 normal, 5 idle), from its stat line. */
export function threadPolicy(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  // The command name may hold spaces and parentheses; the fields after it do not. Policy is field 41 of the line, 39 after the name.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}

/**
 * Runs the calling thread only on CPU time no other thread wants: nice
 * `nice` first, then Linux's idle class (SCHED_IDLE) through util-linux's
 * `chrt`, which Node cannot ask for itself. Nice 19 alone was not enough:
 * the scheduler counts a core running a nice-19 thread as busy, so a thread
 * that takes batches in, woken, often queued behind another on the other
 * core instead of taking that one at once; a core running only idle-class
 * threads counts as free (bench/README.md, "Destinations beside
 * ingestion"). Without `chrt`, or where it is refused, the nice value stays.
 */
export function lowestPriority(nice = 19): ThreadPriority {
  if (process.platform !== 'linux') return 'unchanged';
  let got: ThreadPriority = 'unchanged';
  try {
    setPriority(nice);
    got = 'nice';
  } catch {
    // Not allowed here (a sandbox).
  }
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', threadId()], { stdio: 'ignore', timeout: 5_000 });
    if (threadPolicy() === SCHED_IDLE) got = 'idle';
  } catch {
    // No chrt (a minimal image), or not allowed: the nice value stays.
  }
  return got;
}
