import { AsyncLocalStorage } from 'node:async_hooks';
import type { Readable, Writable } from 'node:stream';

/**
 * What a command reads and writes besides its store: its streams, environment and where it was
 * started. `inlet` passes its process's; a caller running commands within one process passes its own,
 * so that nothing a command prints, reads or sets reaches another command.
 */
export interface CliIo {
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean; columns?: number };
  stdin: Readable & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** The script the command was started by (process.argv[1]): `--help` names the command by it. */
  script: string | undefined;
  cwd: string;
}

/** The streams, environment and start of this process. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, script: process.argv[1], cwd: process.cwd() };
}

interface Running {
  io: CliIo;
  exitCode: number;
}

const running = new AsyncLocalStorage<Running>();

/** Runs `work` as one command on `io`; resolves to the exit status it set (0 unless it failed). */
export async function withIo(io: CliIo, work: () => Promise<void>): Promise<number> {
  const state: Running = { io, exitCode: 0 };
  await running.run(state, work);
  return state.exitCode;
}

/** The io of the command running now (the process's outside any). */
export function cliIo(): CliIo {
  return running.getStore()?.io ?? processIo();
}

/** Sets the exit status of the command running now. */
export function setExitCode(code: number): void {
  const state = running.getStore();
  if (state === undefined) process.exitCode = code;
  else state.exitCode = code;
}
