/**
 * Scheduling priorities. On Linux a thread is a task of its own:
 * setpriority on "this process" sets the calling thread alone, and each
 * other thread is set by its thread id. Elsewhere a thread's priority would
 * set the whole process: there only a whole process is lowered (the
 * delivery process), never a thread.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
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
 * Runs every thread of this process, those it starts later included, only
 * on CPU time no other process wants: each task at nice 19, then Linux's
 * idle class (SCHED_IDLE) for all of them at once, through util-linux's
 * `chrt --all-tasks`, which Node cannot ask for itself. Nice 19 alone was
 * not enough beside ingestion: when the scheduler places a woken thread it
 * counts a core running a nice-19 thread as busy and one running only
 * idle-class threads as free (bench/README.md, "Destinations beside
 * ingestion"). Threads started later take their creator's scheduling. V8's
 * helper threads, started before any JavaScript runs, collect the garbage
 * of every thread of their process: inside the server they would collect
 * delivery's at normal priority, which is why delivery is a process of its
 * own. Without `chrt`, or where it is refused, the nice values stay.
 */
export function lowestPriorityProcess(): void {
  if (process.platform !== 'linux') {
    // Elsewhere a process's priority is every thread's: the lowest the platform gives (Windows: the idle class).
    try {
      setPriority(19);
    } catch {
      // Not allowed here: the priority it started with stays.
    }
    return;
  }
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      setPriority(Number(tid), 19);
    } catch {
      // Ended while listed, or not allowed: the idle class below is what matters.
    }
  }
  try {
    execFileSync('chrt', ['--all-tasks', '--idle', '--pid', '0', String(process.pid)], { stdio: 'ignore', timeout: 5_000 });
  } catch {
    // No chrt, or not allowed: the nice values stay.
  }
}
