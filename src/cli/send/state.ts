import { type Hash, createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { UsageError } from '../context.js';

/**
 * What `inlet send` keeps so that `--resume` sends only what remains: every
 * line up to `line` has its final outcome, and those lines are the file's
 * first `offset` bytes, whose SHA-256 is `prefix_sha256`. A resume checks
 * that hash: the lines already sent must be byte for byte the same, while
 * what follows them may have changed or grown.
 */
export interface SendState {
  inlet_send_state: 1;
  /** The file, as it was given. */
  file: string;
  /** The endpoint it went to: /api/v1/batch or /api/v1/import. */
  path: string;
  /** The run's id: an item sent without insert_id gets `<run>-<line>`, the same again on resume. */
  run: string;
  line: number;
  offset: number;
  prefix_sha256: string;
  updated_at: string;
}

/** Where the state of a send of `file` is kept unless --state says otherwise. */
export function defaultStatePath(file: string): string {
  return `${file}.inlet-send.json`;
}

/** A new run's id: 16 hex characters, so `<run>-<line>` stays well within insert_id's 80. */
export function newRunId(): string {
  return `send-${randomBytes(8).toString('hex')}`;
}

/** The state kept at `statePath`, or null when there is none. */
export function readState(statePath: string): SendState | null {
  if (!existsSync(statePath)) return null;
  let v: Partial<SendState>;
  try {
    v = JSON.parse(readFileSync(statePath, 'utf8')) as Partial<SendState>;
  } catch (e) {
    throw new UsageError(`Cannot read the send state ${statePath} (${(e as Error).message}); remove it and send the file without --resume.`);
  }
  const ok =
    v.inlet_send_state === 1 &&
    typeof v.run === 'string' &&
    /^[A-Za-z0-9_-]{1,60}$/.test(v.run) &&
    typeof v.path === 'string' &&
    Number.isSafeInteger(v.line) &&
    Number.isSafeInteger(v.offset) &&
    typeof v.prefix_sha256 === 'string';
  if (!ok) throw new UsageError(`${statePath} is not a state \`inlet send\` wrote; remove it and send the file without --resume.`);
  return v as SendState;
}

/** The SHA-256 of a file's first bytes, carried forward as more of them are acknowledged. */
export class PrefixHash {
  private readonly hash: Hash = createHash('sha256');
  private upTo = 0;

  constructor(private readonly file: string) {}

  /** Hashes the file up to `offset` (from where it got to) and says the digest so far. */
  async advance(offset: number): Promise<string> {
    if (offset > this.upTo) {
      for await (const chunk of createReadStream(this.file, { start: this.upTo, end: offset - 1 })) this.hash.update(chunk as Buffer);
      this.upTo = offset;
    }
    return this.hash.copy().digest('hex');
  }
}

/**
 * Checks that `file` still starts with the lines `state` says were sent, and
 * returns the hash carried to that point. Throws, saying what to do, when
 * they changed.
 */
export async function verifyPrefix(file: string, statePath: string, state: SendState): Promise<PrefixHash> {
  const changed = new UsageError(
    `${file} has changed since ${statePath} was written: its first ${state.line} lines, already sent, are not the same. ` +
      'Send the file again without --resume (items with an insert_id come back as duplicates), or give the file that was sent.',
  );
  if (statSync(file).size < state.offset) throw changed;
  const hash = new PrefixHash(file);
  if ((await hash.advance(state.offset)) !== state.prefix_sha256) throw changed;
  return hash;
}

/** The state file of one run: rewritten whole (written aside, then renamed) each time, so a crash leaves the last one. */
export class StateFile {
  private chain: Promise<unknown> = Promise.resolve();
  private written = -1;

  constructor(
    readonly statePath: string,
    private readonly file: string,
    private readonly path: string,
    private readonly run: string,
    private readonly hash: PrefixHash,
  ) {}

  /** Records that lines up to `line` (ending at `offset`) have their outcome; one write at a time, in order. */
  save(line: number, offset: number): Promise<void> {
    const next = this.chain.then(async () => {
      if (line === this.written) return;
      const state: SendState = {
        inlet_send_state: 1,
        file: this.file,
        path: this.path,
        run: this.run,
        line,
        offset,
        prefix_sha256: await this.hash.advance(offset),
        updated_at: new Date().toISOString(),
      };
      // A name nobody can guess, made new ('wx'): a link planted under a
      // predictable name in a shared folder would have it write elsewhere.
      const aside = `${this.statePath}.${randomBytes(8).toString('hex')}.tmp`;
      await writeFile(aside, `${JSON.stringify(state, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
      await rename(aside, this.statePath);
      this.written = line;
    });
    this.chain = next.catch(() => {});
    return next;
  }

  /** The run finished with nothing left to send: no state to resume from. */
  async remove(): Promise<void> {
    await this.chain;
    await rm(this.statePath, { force: true });
  }
}
