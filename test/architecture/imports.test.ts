/**
 * Imports point one way: edge → intakes → pipeline → domain → port ← adapters. Every
 * source file's imports are read and checked against the layer rules below,
 * so a backward import fails here instead of creeping in.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

type Layer = 'edge' | 'intakes' | 'pipeline' | 'domain' | 'port' | 'errors' | 'compose' | 'base' | `adapter:${string}`;

/** The layer of a file, by its path under src/; null for a file no rule covers yet. */
export function layerOf(path: string): Layer | null {
  const [top, second] = path.split('/');
  // What serves HTTP: the API, its docs, the console and the metrics endpoint.
  if (top === 'edge' || top === 'docs' || top === 'console' || top === 'metrics') return 'edge';
  // Settings: the one table of what an operator sets, with every part's defaults (the edge's
  // included), read once at start by the command: a composition root, as the cli is.
  if (top === 'config.ts' || top === 'settings.ts' || top === 'settings-doc.ts') return 'compose';
  // One folder per wire format (batch, segment, posthog) and the registry that lists them: what an
  // intake declares and how its bodies map to items. Above the pipeline, whose item checks the
  // maps feed; below the edge, whose one intake pipeline runs every intake from the registry. The
  // check threads sit here too: a thread maps bodies in an intake's shape, so it must reach the maps.
  if (top === 'intakes') return 'intakes';
  if (top === 'pipeline') return 'pipeline';
  if (top === 'domain') return 'domain';
  if (top === 'errors') return 'errors';
  if (top === 'cli') return 'compose';
  // Destination kinds (one folder each, and the registry that lists them) are adapters like the
  // engines: they implement the port's DestinationKind and import nothing but the port. The domain,
  // the console and the CLI reach them through the kinds the composition root hands in.
  if (top === 'destinations') return 'adapter:destinations';
  // The composition root: the server built from its parts, for `inlet serve` and the tests.
  if (top === 'server.ts') return 'compose';
  // Where a thread's compiled code is: asked by threads' owners in every layer, adapters included,
  // and importing nothing of the project.
  if (top === 'thread-entry.ts') return 'base';
  // A thread's scheduling priority: asked by threads in any layer, importing nothing of the project.
  if (top === 'thread-priority.ts') return 'base';
  // Rate limiters, out of stores/ (which holds the data's engines): the same shape, the limiter
  // port beside one folder per engine (local/, redis/) and open-limiter.ts choosing. The rules
  // that use them stay in domain/limits/.
  if (top === 'limiters' && second !== undefined) {
    if (second.startsWith('open-') && second.endsWith('.ts')) return 'compose';
    if (second.endsWith('.ts')) return 'port';
    return `adapter:limiters/${second}`;
  }
  if (top === 'stores' && second !== undefined) {
    // Where the engines are chosen (open-store.ts, ...): the one place that knows them all.
    if (second.startsWith('open-') && second.endsWith('.ts')) return 'compose';
    // Every other file beside the adapters' folders is a port (port.ts, port-outcomes.ts, ...).
    if (second.endsWith('.ts')) return 'port';
    return `adapter:${second}`;
  }
  return null;
}

/** What each layer may import besides itself. An adapter imports the ports and its own folder only; ports import each other. */
const MAY_IMPORT: Record<string, Layer[]> = {
  edge: ['intakes', 'pipeline', 'domain', 'port', 'errors'],
  intakes: ['pipeline', 'domain', 'port', 'errors'],
  pipeline: ['domain', 'port', 'errors'],
  domain: ['port', 'errors'],
  port: ['errors'],
  errors: [],
  base: [],
  adapter: ['port'],
};

/**
 * The queries written once for both SQL engines (stores/sql): an adapter part
 * that the SQL engines plug their dialect into, and that imports no engine.
 */
const SHARED_SQL: Layer = 'adapter:sql';
const SQL_ENGINES: Layer[] = ['adapter:sqlite', 'adapter:postgres'];

/** Whether a file of layer `from` may import one of layer `to`. */
export function allowed(from: Layer, to: Layer): boolean {
  if (from === to || from === 'compose' || to === 'base') return true;
  if (to === SHARED_SQL && SQL_ENGINES.includes(from)) return true;
  const rules = MAY_IMPORT[from.startsWith('adapter:') ? 'adapter' : from]!;
  return rules.includes(to);
}

/**
 * The engine contract (in stores/port.ts) names, as types, the tables an
 * engine's Kysely instance is over (sql/schema.ts) and the dialect an
 * engine names (sql/dialects.ts, whose pieces of SQL stores/sql owns, not
 * the engines): both are declared beside the queries written once, which no
 * engine copies.
 */
const ENGINE_CONTRACT_NAMES = new Set([
  'stores/port.ts stores/sql/schema.ts', 'stores/port.ts stores/sql/dialects.ts',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** Relative specifiers of every import, export … from, and import() in a file. */
export function importsOf(text: string): string[] {
  const found: string[] = [];
  const patterns = [/\b(?:import|export)\s[^;]*?\sfrom\s*['"]([^'"]+)['"]/gs, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, /^\s*import\s*['"]([^'"]+)['"]/gm];
  for (const re of patterns) for (const m of text.matchAll(re)) found.push(m[1]!);
  return found.filter((s) => s.startsWith('.'));
}

it('every source file belongs to a layer', () => {
  const unplaced = sourceFiles(SRC)
    .map((f) => relative(SRC, f))
    .filter((f) => layerOf(f) === null);
  // A new top-level folder needs a line in layerOf (and MAY_IMPORT if it is a layer of its own).
  expect(unplaced).toEqual([]);
});

it('imports point one way: edge → intakes → pipeline → domain → port ← adapters', () => {
  const wrong: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = relative(SRC, file);
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const target = relative(SRC, resolve(dirname(file), spec)).replace(/\.js$/, '.ts');
      const fromLayer = layerOf(from);
      const toLayer = layerOf(target);
      if (target.startsWith('..')) wrong.push(`${from} imports ${spec}, outside src/`);
      else if (ENGINE_CONTRACT_NAMES.has(`${from} ${target}`)) continue;
      else if (fromLayer !== null && toLayer !== null && !allowed(fromLayer, toLayer)) wrong.push(`${from} (${fromLayer}) imports ${target} (${toLayer})`);
    }
  }
  expect(wrong).toEqual([]);
});

it('limits are constants of the code that enforces them: only the docs read docs/facts.ts', () => {
  // The docs import the limits; a server part that took one from the docs would make the docs its owner.
  const readers = sourceFiles(SRC)
    .map((f) => relative(SRC, f))
    .filter((f) => !f.startsWith('docs/'))
    .filter((f) => importsOf(readFileSync(join(SRC, f), 'utf8')).some((spec) => relative(SRC, resolve(dirname(join(SRC, f)), spec)) === 'docs/facts.js'));
  expect(readers).toEqual([]);
});

it('the rules refuse the backward imports this project once had', () => {
  expect(allowed(layerOf('pipeline/check-batch.ts')!, layerOf('edge/request-checks.ts')!)).toBe(false);
  expect(allowed(layerOf('pipeline/foreign-body.ts')!, layerOf('intakes/segment/segment-map.ts')!)).toBe(false);
  expect(allowed(layerOf('intakes/segment/intake.ts')!, layerOf('edge/intake-pipeline.ts')!)).toBe(false);
  expect(allowed(layerOf('stores/port.ts')!, layerOf('pipeline/check-item.ts')!)).toBe(false);
  expect(allowed(layerOf('stores/sqlite/admin.ts')!, layerOf('domain/keys.ts')!)).toBe(false);
  expect(allowed(layerOf('domain/limits/policies.ts')!, layerOf('limiters/redis/redis-limiter.ts')!)).toBe(false);
  expect(allowed(layerOf('limiters/redis/redis-limiter.ts')!, layerOf('domain/limits/policies.ts')!)).toBe(false);
  expect(allowed(layerOf('limiters/local/local-limiter.ts')!, layerOf('stores/sqlite/sqlite-store.ts')!)).toBe(false);
  expect(allowed(layerOf('stores/sqlite/page-reader.ts')!, layerOf('thread-entry.ts')!)).toBe(true);
  expect(allowed(layerOf('stores/sqlite/rows.ts')!, layerOf('stores/postgres/rows.ts')!)).toBe(false);
  expect(allowed(layerOf('stores/sql/admin.ts')!, layerOf('stores/sqlite/sql-engine.ts')!)).toBe(false);
  expect(allowed(layerOf('domain/delivery/deliverer.ts')!, layerOf('destinations/webhook/kind.ts')!)).toBe(false);
  expect(allowed(layerOf('console/views/destinations.ts')!, layerOf('destinations/registry.ts')!)).toBe(false);
  expect(importsOf("import {\n  a,\n  b,\n} from '../x.js';\nexport { c } from './y.js';\nconst z = await import('./z.js');\nimport 'node:fs';")).toEqual([
    '../x.js', './y.js', './z.js',
  ]);
});
