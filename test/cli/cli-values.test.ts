import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { cliJson, runCli } from '../helpers/cli.js';

const tmp = tempDir('inlet-cli-values-');
afterAll(() => tmp.remove());
const env = { INLET_DATA_DIR: tmp.dir };

/** Runs a command expected to be refused; returns its stderr. */
async function refused(args: string[]): Promise<string> {
  const r = await runCli([...args, '--json'], env);
  expect(r.code, `${args.join(' ')}: ${r.stdout}`).toBe(1);
  expect(r.stdout).toBe('');
  return r.stderr;
}

describe('values the inlet command takes', () => {
  it('fault 13: numbers are not bounded (a monthly event limit is never stored rounded; every number states its range)', async () => {
    const project = await cliJson(['project', 'create', '--name', 'Numbers'], env);
    // Each form is tried in src/cli/context.test.ts; here the command as a whole.
    for (const n of ['99999999999999999999', '-1']) {
      expect(await refused(['project', 'update', project.id, '--monthly-event-limit', n])).toBe(
        `inlet: --monthly-event-limit takes a whole number from 0 to 1,000,000,000,000 or none, not "${n}".\n`,
      );
    }
    expect((await cliJson(['project', 'update', project.id, '--monthly-event-limit', '1000000000000'], env)).monthly_event_limit).toBe(1e12);

    const source = await cliJson(['source', 'create', '--project', project.id, '--name', 'S'], env);
    expect(await refused(['events', 'list', '--source', source.id, '--limit', '10001'])).toMatch(/--limit takes a whole number from 1 to 10,000, not "10001"/);
  });

  it('fault: human lines printed large numbers without separators ("24305664 bytes"); they write 24,305,664, and --json keeps plain numbers', async () => {
    const project = await cliJson(['project', 'create', '--name', 'Separators'], env);
    const human = async (args: string[]) => {
      const r = await runCli(args, env);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    expect(await human(['project', 'update', project.id, '--monthly-event-limit', '1000000', '--retention-days', '3650'])).toBe(
      `project ${project.id}: batch API off, monthly event limit 1,000,000, retention 3,650 days\n`,
    );
    expect(await human(['project', 'list'])).toMatch(new RegExp(`${project.id} .* 1,000,000 +3,650d`));
    expect(await human(['usage', '--project', project.id])).toMatch(/: 0 events of 1,000,000\n$/);
    const backup = await human(['backup', '--to', `${tmp.dir}/copy.db`]);
    expect(backup).toMatch(/^backed up to .*copy\.db \(\d{1,3}(,\d{3})+ bytes\)\n$/);
    expect((await cliJson(['project', 'update', project.id, '--monthly-event-limit', '1000000'], env)).monthly_event_limit).toBe(1_000_000);
  });

  it('fault 14: browser identify takes the same distinct_id and anonymous_id rules as the API', async () => {
    const project = await cliJson(['project', 'create', '--name', 'Ids'], env);
    const identify = (anonymousId: string, distinctId: string) =>
      ['browser', 'identify', '--project', project.id, '--anonymous-id', anonymousId, '--distinct-id', distinctId];
    expect(await refused(identify('per_abc', 'undefined'))).toMatch(/--distinct-id is refused: "distinct_id" "undefined" is a placeholder/);
    expect(await refused(identify('per_abc', 'a\u0007b'))).toMatch(/^inlet: --distinct-id is refused: "distinct_id" must not hold control characters/);
    expect(await refused(identify('per_a b', 'cust_1'))).toMatch(/^inlet: --anonymous-id is refused: "anonymous_id" must be a browser person key/);
    const person = await cliJson(identify('per_abc', 'cust_1'), env);
    expect(person).toMatchObject({ id: 'per_abc', distinct_ids: ['cust_1'] });
  });
});
