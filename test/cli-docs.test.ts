/**
 * docs/cli.md is the command reference: every command of the program has a
 * section ("### `inlet …`"), every option of a command is named in its
 * section, and the page names no command or option the program does not have.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { program } from '../src/cli/main.js';

const PAGE = readFileSync(new URL('../docs/cli.md', import.meta.url), 'utf8');

/** Every command that runs something (not only groups others), by its words after "inlet". */
function leafCommands(cmd: Command, path: string[] = []): { path: string; cmd: Command }[] {
  return cmd.commands.flatMap((c) => {
    const p = [...path, c.name()];
    return c.commands.length === 0 ? [{ path: p.join(' '), cmd: c }] : leafCommands(c, p);
  });
}

/** The page's sections: heading "### `inlet x y`" to the next heading. */
function sections(): Map<string, string> {
  const out = new Map<string, string>();
  const parts = PAGE.split(/^### /m).slice(1);
  for (const part of parts) {
    const m = /^`inlet ([a-z -]+)`\n/.exec(part);
    if (m) out.set(m[1]!, part.split(/^## /m)[0]!);
  }
  return out;
}

const commands = leafCommands(program).filter((c) => c.path !== 'help');
const documented = sections();

describe('docs/cli.md documents the inlet program', () => {
  it('has a section for every command', () => {
    expect(commands.length).toBeGreaterThan(10);
    expect(commands.map((c) => c.path).filter((p) => !documented.has(p))).toEqual([]);
  });

  it('names every option of a command in its section', () => {
    for (const { path, cmd } of commands) {
      const section = documented.get(path) ?? '';
      for (const o of cmd.options) expect(section, `inlet ${path}: ${o.flags}`).toContain(`\`${o.flags}`);
    }
  });

  it('documents no command and no option the program does not have', () => {
    const paths = new Set(commands.map((c) => c.path));
    expect([...documented.keys()].filter((p) => !paths.has(p))).toEqual([]);
    for (const { path, cmd } of commands) {
      const named = [...(documented.get(path) ?? '').matchAll(/`(--[a-z-]+)/g)].map((m) => m[1]!);
      const known = new Set(cmd.options.map((o) => o.long));
      expect(named.filter((f) => !known.has(f)), `inlet ${path}`).toEqual([]);
    }
  });
});
