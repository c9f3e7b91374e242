/**
 * Every command's --help ends with one or two examples (fault: --help had none), and each
 * example is a command line the program takes: its own command, and only options it has.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, examplesOf, leafCommands } from '../../src/cli/examples.js';
import { program } from '../../src/cli/main.js';
import { runCli } from '../helpers/process.js';

const commands = leafCommands(program).filter((c) => c.path !== 'help');

/** What `inlet PATH --help` prints, from the program itself. */
function helpOf(cmd: Command): string {
  let out = '';
  cmd.configureOutput({ writeOut: (s) => (out += s) });
  cmd.outputHelp();
  return out;
}

/** The words of an example after its command (the part before a pipe or redirection that runs inlet). */
function inletWords(example: string): string[] {
  const part = example.split(/ [|>] /).find((p) => p.trimStart().startsWith('inlet '))!;
  return [...part.trim().matchAll(/"[^"]*"|'[^']*'|\S+/g)].map((m) => m[0]).slice(1);
}

describe('inlet --help examples', () => {
  it('every command ends its help with one or two examples of itself', () => {
    expect(commands.length).toBeGreaterThan(10);
    for (const { path, cmd } of commands) {
      const examples = EXAMPLES[path] ?? [];
      expect(examples.length, `inlet ${path}`).toBeGreaterThanOrEqual(1);
      expect(examples.length, `inlet ${path}`).toBeLessThanOrEqual(2);
      const help = helpOf(cmd).trimEnd().split('\n');
      const tail = help.slice(-examples.length - 1);
      expect(tail[0], `inlet ${path}`).toMatch(/^Examples?:$/);
      expect(tail.slice(1).map((l) => l.trim()), `inlet ${path}`).toEqual(examples.map((e) => `$ ${e}`));
    }
  });

  it('inlet itself and every group of commands end their help with examples of their commands', () => {
    const groups: { path: string; cmd: Command }[] = [{ path: '', cmd: program }, ...program.commands.filter((c) => c.commands.length > 0).map((c) => ({ path: c.name(), cmd: c }))];
    expect(groups.length).toBeGreaterThan(5);
    for (const { path, cmd } of groups) {
      const examples = examplesOf(cmd, path);
      expect(examples.length, `inlet ${path}`).toBeGreaterThanOrEqual(1);
      for (const e of examples) expect(e, `inlet ${path}`).toMatch(new RegExp(`(^|\\| )inlet ${path}`));
      const tail = helpOf(cmd).trimEnd().split('\n').slice(-examples.length - 1);
      expect(tail, `inlet ${path}`).toEqual([`Example${examples.length === 1 ? '' : 's'}:`, ...examples.map((e) => `  $ ${e}`)]);
    }
  });

  it('every example names its own command and only options that command has', () => {
    expect(Object.keys(EXAMPLES).filter((p) => !commands.some((c) => c.path === p))).toEqual([]);
    for (const { path, cmd } of commands) {
      const known = new Set(cmd.options.flatMap((o) => [o.long, o.short]).filter((f) => f !== undefined));
      for (const example of EXAMPLES[path] ?? []) {
        const words = inletWords(example);
        expect(words.slice(0, path.split(' ').length).join(' '), example).toBe(path);
        expect(words.filter((w) => w.startsWith('-') && w !== '-' && !known.has(w)), example).toEqual([]);
        for (const o of cmd.options.filter((o) => o.mandatory)) expect(words, `${example} lacks ${o.long}`).toContain(o.long);
      }
    }
  });

  it('bin/inlet prints them at the end of --help, written as it is called from the repository', async () => {
    const r = await runCli(['events', 'list', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split('\n').slice(-3)).toEqual([
      'Examples:',
      '  $ ./bin/inlet events list --source src_ae29intQ9vAM2YG6',
      '  $ ./bin/inlet events list --source src_ae29intQ9vAM2YG6 --event invoice_paid --limit 20 --json',
    ]);
  });
});
