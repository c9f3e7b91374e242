import { tempDir } from './fixture.js';
import { cliJson } from './cli.js';
import { provision, type Server, startServer, stopServer } from './process.js';

/** A real `inlet serve` on a fresh data directory, with a project (API on), source and key. */
export interface LiveServer {
  server: Server;
  url: string;
  key: string;
  sourceId: string;
  projectId: string;
  env: Record<string, string>;
  /** Stored events of the source, newest first, as `inlet events list --json` prints them (the command run in this process). */
  events(limit?: number): Promise<{ event: string; insert_id: string | null; distinct_id: string | null; anonymous_id: string | null; timestamp: string; properties: Record<string, unknown> }[]>;
  person(distinctId: string): Promise<{ id: string; traits: Record<string, unknown>; distinct_ids: string[]; groups: { group_type: string; group_key: string }[] }>;
  /** A group, as `inlet group show --json` prints it. */
  group(groupType: string, groupKey: string): Promise<{ group_type: string; group_key: string; traits: Record<string, unknown>; members: string[] }>;
  stop(): Promise<void>;
}

export async function startLiveServer(serveEnv: Record<string, string> = {}): Promise<LiveServer> {
  const tmp = tempDir('inlet-live-');
  // SQLite in its own directory, whatever the caller's environment says.
  const env = { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: '', INLET_REDIS_URL: '' };
  const { project, source, key } = await provision(env);
  const server = await startServer([], { ...env, ...serveEnv });
  return {
    server,
    url: server.url,
    key: key.key,
    sourceId: source.id,
    projectId: project.id,
    env,
    events: (limit = 1000) => cliJson(['events', 'list', '--source', source.id, '--limit', String(limit)], env),
    person: (distinctId) => cliJson(['person', 'show', '--project', project.id, '--distinct-id', distinctId], env),
    group: (groupType, groupKey) => cliJson(['group', 'show', '--project', project.id, '--type', groupType, '--key', groupKey], env),
    stop: async () => {
      await stopServer(server);
      tmp.remove();
    },
  };
}
