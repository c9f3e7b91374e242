/**
 * Fault 18: messages pointed at things that do not exist here ("ask for early
 * access", "use the browser tracker", an import endpoint "once it is
 * available"). A message says what to change, and an `inlet` command it names
 * is one the program has, with options it takes.
 */
import type { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { program } from '../src/cli/main.js';
import { codeSections } from '../src/docs/code-sections.js';
import { acceptedDollarKeys } from '../src/docs/dollar-keys.js';
import { DROP_REASONS, ITEM_ERRORS, REQUEST_ERRORS } from '../src/errors/codes.js';
import { SqliteStore } from '../src/stores/sqlite/sqlite-store.js';
import { makeFixture, send, tempDir } from './helpers/fixture.js';
import { runCli } from './helpers/cli.js';

/** Phrases that promise or point at something this product does not have. */
const NOWHERE = [/early access/i, /browser tracker/i, /\bcoming\b/i, /once it is available/i, /for later/i, /contact (us|support)/i, /dashboard/i];

/** Every sentence a client or operator can be shown from the code table and the generated docs. */
function tableTexts(): string[] {
  return [
    ...Object.values(REQUEST_ERRORS).flatMap((e) => [e.message, e.when, e.retry]),
    ...Object.values(ITEM_ERRORS).map((e) => e.when),
    ...Object.values(DROP_REASONS).map((e) => e.when),
    ...acceptedDollarKeys().map((k) => k.note),
    codeSections().value,
  ];
}

/** `inlet …` commands quoted in a text, as argument lists. */
function quotedCommands(text: string): string[][] {
  return [...text.matchAll(/inlet ((?:[a-z][a-z-]*|<[^>]+>|--[a-z-]+)(?: (?:[a-z][a-z-]*|<[^>]+>|--[a-z-]+|true|false|none))*)/g)].map((m) => m[1]!.split(' '));
}

/** Whether `args` names a command of the program and only options that command takes. */
function commandExists(args: string[]): boolean {
  let cmd: Command = program;
  let i = 0;
  for (; i < args.length; i++) {
    const sub = cmd.commands.find((c) => c.name() === args[i]);
    if (sub === undefined) break;
    cmd = sub;
  }
  if (cmd === program) return false;
  const flags = args.slice(i).filter((a) => a.startsWith('--'));
  return flags.every((f) => cmd.options.some((o) => o.long === f));
}

describe('fault 18: messages point at what exists here', () => {
  it('no message of the code table or the generated docs points at something this product does not have', () => {
    for (const text of tableTexts()) for (const p of NOWHERE) expect(text, String(p)).not.toMatch(p);
  });

  it('every inlet command a message names exists, with those options', () => {
    const named = tableTexts().flatMap(quotedCommands);
    expect(named.length).toBeGreaterThan(0);
    for (const args of named) expect(commandExists(args), `inlet ${args.join(' ')}`).toBe(true);
  });

  describe('a project with the API switched off', () => {
    const tmp = tempDir('inlet-messages-');
    afterAll(() => tmp.remove());

    it('is answered with the console page and the command that switch it on, and running that command lets the next request in', async () => {
      const f = await makeFixture({ store: SqliteStore.open(tmp.dir), apiEnabled: false });
      try {
        const batch = { items: [{ event: 'e', distinct_id: 'u' }] };
        const res = await send(f, batch);
        expect(res.statusCode).toBe(404);
        const message = res.json().error.message as string;
        for (const p of NOWHERE) expect(message).not.toMatch(p);
        // The console's way too: its project settings, at this server's address.
        expect(message).toContain(`${f.app.inletBaseUrl}/console/projects/${f.projectId}#settings`);
        const command = /"inlet ([^"]+)"/.exec(message)?.[1]?.split(' ');
        expect(command, message).toEqual(['project', 'update', f.projectId, '--api-enabled', 'true']);
        const run = await runCli([...command!, '--json'], { INLET_DATA_DIR: tmp.dir });
        expect(run.code, run.stderr).toBe(0);
        expect((await send(f, batch)).statusCode).toBe(202);
      } finally {
        await f.close();
      }
    });
  });
});
