import type Database from 'better-sqlite3';
import type pg from 'pg';

/**
 * A database's schema as the engine reports it back (its catalog, not the
 * SQL that made it), so that two databases reached by different paths can be
 * compared: tables, columns in order with their types, nullability and
 * defaults, keys, checks, indexes with their columns, uniqueness and
 * predicates, and on PostgreSQL partitioning and functions.
 */
export type SchemaSnapshot = Record<string, unknown>;

/** Lower case, no identifier quotes, single spaces: how two spellings of one expression compare. */
const normal = (s: string | null): string | null => (s === null ? null : s.replace(/"/g, '').replace(/\s+/g, ' ').trim().toLowerCase());

/** The text of each `check (...)` in a CREATE TABLE statement, its parentheses balanced. */
function checks(sql: string): string[] {
  const found: string[] = [];
  const lower = sql.toLowerCase();
  for (let at = lower.indexOf('check'); at >= 0; at = lower.indexOf('check', at + 5)) {
    const open = lower.indexOf('(', at);
    let depth = 0;
    for (let i = open; i < lower.length; i++) {
      if (lower[i] === '(') depth++;
      else if (lower[i] === ')' && --depth === 0) {
        found.push(normal(lower.slice(open + 1, i))!);
        break;
      }
    }
  }
  return found;
}

export function sqliteSchema(db: Database.Database): SchemaSnapshot {
  const snapshot: SchemaSnapshot = {};
  const objects = db
    .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' OR type = 'index' ORDER BY name")
    .all() as { type: string; name: string; tbl_name: string; sql: string | null }[];
  const tableList = db.prepare('PRAGMA table_list').all() as { name: string; wr: number; strict: number }[];
  for (const o of objects) {
    if (o.type === 'table') {
      const columns = (db.prepare(`PRAGMA table_xinfo(${JSON.stringify(o.name)})`).all() as Record<string, unknown>[]).map((c) => ({
        name: c.name, type: String(c.type).toLowerCase(), notnull: c.notnull, default: normal(c.dflt_value as string | null), pk: c.pk, hidden: c.hidden,
      }));
      const listed = tableList.find((t) => t.name === o.name)!;
      snapshot[`table ${o.name}`] = {
        columns, withoutRowid: listed.wr, strict: listed.strict, autoincrement: /autoincrement/i.test(o.sql ?? ''), checks: checks(o.sql ?? ''),
      };
      const indexes = db.prepare(`PRAGMA index_list(${JSON.stringify(o.name)})`).all() as { name: string; unique: number; origin: string; partial: number }[];
      for (const ix of indexes) {
        const keys = (db.prepare(`PRAGMA index_xinfo(${JSON.stringify(ix.name)})`).all() as { name: string | null; desc: number; coll: string; key: number }[])
          .filter((k) => k.key === 1).map((k) => ({ name: k.name, desc: k.desc, coll: k.coll }));
        const sql = objects.find((x) => x.name === ix.name)?.sql ?? null;
        const where = sql === null ? null : normal(sql.slice(sql.toLowerCase().lastIndexOf(' where ') >= 0 ? sql.toLowerCase().lastIndexOf(' where ') : sql.length));
        snapshot[`index ${ix.name}`] = { table: o.name, unique: ix.unique, origin: ix.origin, partial: ix.partial, keys, where };
      }
    } else if (o.type !== 'index') {
      snapshot[`${o.type} ${o.name}`] = normal(o.sql);
    }
  }
  return snapshot;
}

export async function postgresSchema(c: pg.Client): Promise<SchemaSnapshot> {
  const snapshot: SchemaSnapshot = {};
  const tables = await c.query<{ oid: number; name: string; kind: string; partkey: string | null; bound: string | null; options: string[] | null }>(`
    SELECT c.oid, c.relname AS name, c.relkind AS kind, pg_get_partkeydef(c.oid) AS partkey,
      pg_get_expr(c.relpartbound, c.oid) AS bound, c.reloptions AS options
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'S') ORDER BY c.relname`);
  for (const t of tables.rows) {
    const columns = await c.query(`
      SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull,
        pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity AS identity, a.attgenerated AS generated,
        (SELECT collname FROM pg_collation WHERE oid = a.attcollation AND collname <> 'default') AS collation
      FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, [t.oid]);
    const constraints = await c.query(
      'SELECT conname AS name, contype AS type, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1 ORDER BY conname',
      [t.oid],
    );
    const parent = await c.query('SELECT inhparent::regclass::text AS parent FROM pg_inherits WHERE inhrelid = $1', [t.oid]);
    snapshot[`table ${t.name}`] = {
      kind: t.kind, partitionedBy: t.partkey, partitionOf: parent.rows[0]?.parent ?? null, bound: t.bound, options: t.options,
      columns: t.kind === 'S' ? [] : columns.rows, constraints: constraints.rows,
    };
  }
  const indexes = await c.query<{ name: string; def: string }>(
    'SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname',
  );
  for (const ix of indexes.rows) snapshot[`index ${ix.name}`] = ix.def;
  const reloptions = await c.query<{ name: string; options: string[] | null }>(`
    SELECT c.relname AS name, c.reloptions AS options FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('i', 'I') AND c.reloptions IS NOT NULL ORDER BY c.relname`);
  for (const ix of reloptions.rows) snapshot[`index options ${ix.name}`] = ix.options;
  const functions = await c.query<{ name: string; def: string }>(`
    SELECT p.proname AS name, pg_get_functiondef(p.oid) AS def FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = current_schema() ORDER BY p.proname`);
  for (const f of functions.rows) snapshot[`function ${f.name}`] = f.def;
  return snapshot;
}
