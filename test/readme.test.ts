/**
 * The README's first request, run as written against a real server: each transcript must be
 * what the commands print today (ids, times, paths and ports apart), so a change to what
 * serve or a command prints shows up here before a newcomer meets it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from './helpers/fixture.js';
import { type Server, runCliAsIs, startServer, stopServer } from './helpers/process.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const section = README.slice(README.indexOf('## A first request'), README.indexOf('\n## ', README.indexOf('## A first request') + 1));
const blocks = [...section.matchAll(/```console\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** A transcript's commands, each with the lines it printed. */
function transcript(block: string): { command: string; output: string[] }[] {
  const out: { command: string; output: string[] }[] = [];
  for (const line of block.trimEnd().split('\n')) {
    if (line.startsWith('$ ')) out.push({ command: line.slice(2), output: [] });
    else if (/^\s+-[Hd] |^\s+[{"\]]/.test(line) && out.at(-1)!.output.length === 0) out.at(-1)!.command += `\n${line}`;
    else out.at(-1)!.output.push(line);
  }
  return out;
}

/** Ids, secrets, times and months as placeholders: what differs from run to run. */
function normalise(text: string): string {
  return text
    .replace(/srv_live_[A-Za-z0-9]{32}/g, 'srv_live_…')
    .replace(/\b(org|prj|src|key|per|usr|req)_[A-Za-z0-9]+/g, '$1_…')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'uuid')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, 'time')
    .replace(/\b\d{4}-\d{2}:/g, 'month:')
    .replace(/ +$/gm, '');
}

const tmp = tempDir('inlet-readme-');
const env = { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: '' };
let server: Server;
/** The README's ids and key, to the ones this run made. */
const named = new Map<string, string>();

beforeAll(async () => {
  server = await startServer([], env);
  await vi.waitFor(() => expect(server.stdout()).toContain('reference: '), { timeout: 10_000 });
});
afterAll(async () => {
  await stopServer(server);
  tmp.remove();
});

/** Runs a README line of ./bin/inlet on this run's store, with this run's ids. */
async function inlet(command: string): Promise<string> {
  let line = command.replace(/^\.\/bin\/inlet /, '');
  for (const [readme, real] of named) line = line.replaceAll(readme, real);
  const args = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
  const r = await runCliAsIs([...args, '--data-dir', tmp.dir], env);
  expect(r.code, `${command}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

/** Learns this run's value of each id the README printed, in the order printed. */
function learn(readmeOutput: string, realOutput: string): void {
  const ids = (s: string) => [...s.matchAll(/\b(?:org|prj|src|key|per)_[A-Za-z0-9]+|srv_live_[A-Za-z0-9]{32}/g)].map((m) => m[0]);
  const [mine, real] = [ids(readmeOutput), ids(realOutput)];
  mine.forEach((id, i) => named.set(id, real[i]!));
}

describe("the README's first request", () => {
  it('serve prints what the README shows', () => {
    const [start] = transcript(blocks[0]!);
    expect(start!.command).toBe('npm start');
    // npm's own lines, then a blank line, then the server's.
    const shown = start!.output.slice(start!.output.lastIndexOf('') + 1);
    const base = server.url.replace('127.0.0.1', 'localhost');
    const printed = server
      .stdout()
      .replaceAll(` --data-dir ${tmp.dir}`, '')
      .replaceAll(join(tmp.dir, 'inlet.db'), '/home/me/inlet/data/inlet.db')
      .replaceAll(server.url, 'http://127.0.0.1:8080')
      .replaceAll(base, 'http://localhost:8080');
    expect(printed.trimEnd().split('\n')).toEqual(shown);
  });

  it('the project, source and key commands print what the README shows', async () => {
    for (const { command, output } of transcript(blocks[1]!)) {
      const printed = await inlet(command);
      learn(output.join('\n'), printed);
      expect(normalise(printed.trimEnd()), command).toBe(normalise(output.join('\n')));
    }
  });

  it('the batch is answered as the README shows', async () => {
    const [curl] = transcript(blocks[2]!);
    const body = /-d '([\s\S]*)'$/.exec(curl!.command)![1]!;
    const key = named.get(/Bearer (srv_live_\w+)/.exec(curl!.command)![1]!)!;
    const r = await fetch(`${server.url}/api/v1/batch`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
    const output = curl!.output;
    expect(`HTTP/1.1 ${r.status} ${r.statusText}`).toBe(output[0]);
    for (const name of ['ratelimit-policy', 'ratelimit', 'content-type', 'content-length']) {
      expect(`${name}: ${r.headers.get(name)}`).toBe(output.find((l) => l.startsWith(`${name}: `)));
    }
    const shown = output.slice(output.indexOf('') + 1).join('\n').replace(/,\n"/g, ',"').replace(/\n/g, ' ');
    expect(normalise(await r.text())).toBe(normalise(shown));
  });

  it('events list, person show and usage print what the README shows', async () => {
    for (const { command, output } of transcript(blocks[3]!)) {
      const printed = await inlet(command);
      learn(output.join('\n'), printed);
      expect(normalise(printed.trimEnd()), command).toBe(normalise(output.join('\n')));
    }
  });
});
