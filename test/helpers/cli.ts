import { PassThrough, Writable } from 'node:stream';
import { runCommand } from '../../src/cli/main.js';
import { BIN, type CliResult, ensureStore, jsonOf, provisionOf } from './process.js';

/**
 * `inlet` commands run in this process, through the entry bin/inlet runs (src/cli/main.ts
 * runCommand), on streams of their own: a piped, non-interactive process with this process's
 * environment plus `env`. A spawn costs most of a second of start-up; what needs a process of its
 * own (the exit through the bin, signals, `inlet serve`, what a fresh start loads) uses
 * ./process.js.
 */

/** Runs an `inlet` command to completion; `input`, when given, is its stdin. The store it names is made first, as `inlet serve` would. */
export async function runCli(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  await ensureStore(args, env);
  return runCliAsIs(args, env, input);
}

/** Runs an `inlet` command as it is: a command on a store nobody made meets no store. */
export async function runCliAsIs(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  // It listens on signals and ends its process, this one here.
  if (args[0] === 'serve' && !args.includes('--help')) throw new Error('inlet serve runs in a process of its own: use ../helpers/process.js');
  const stdout = collector();
  const stderr = collector();
  const stdin = new PassThrough();
  stdin.end(input ?? '');
  const code = await runCommand(args, { stdout: stdout.stream, stderr: stderr.stream, stdin, env: { ...process.env, ...env }, script: BIN, cwd: process.cwd() });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** Runs `inlet … --json` and parses its one JSON value, failing loudly otherwise. */
export const cliJson = jsonOf(runCli);

/** Creates org, project (API on), source and key through the command; returns ids and the key. */
export const provision = provisionOf(cliJson);

/** A stream that keeps what is written to it, as a pipe's reader would. */
function collector(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}
