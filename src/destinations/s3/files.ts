import { gzipSync } from 'node:zlib';
import type { DeliveryEvent, FilePlan } from '../../stores/port-destinations.js';
import type { FileFormat } from './settings.js';

const pad = (n: number): string => String(n).padStart(2, '0');

/**
 * A file's key: prefix/project=<id>/date=YYYY-MM-DD/hour=HH/<first>-<last>.<ext>,
 * the date and hour (UTC) of when its first event arrived. Everything in it
 * comes from the recorded plan, so the file written again after a crash has
 * the same key, and replaces the one written before.
 */
export function objectKey(prefix: string, projectId: string, plan: Pick<FilePlan, 'first' | 'last' | 'at'>, format: FileFormat): string {
  const d = new Date(plan.at);
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const name = `${plan.first}-${plan.last}.${format === 'ndjson' ? 'ndjson.gz' : 'parquet'}`;
  return `${prefix === '' ? '' : `${prefix}/`}project=${projectId}/date=${day}/hour=${pad(d.getUTCHours())}/${name}`;
}

/**
 * NDJSON, gzipped: one event a line, as webhook requests carry them. Zipped
 * on the calling thread (the delivery thread, at the lowest priority): the
 * asynchronous gzip would run on libuv's pool, at the priority of the
 * threads that take batches in.
 */
export function ndjsonFile(eventJson: readonly string[]): Buffer {
  return gzipSync(`${eventJson.join('\n')}\n`, { level: 6 });
}

/**
 * Parquet with a typed column for each field of an event: ids and names as
 * strings, times as timestamps (ms, UTC), server_session a boolean, the
 * properties as JSON text.
 */
export async function parquetFile(events: readonly DeliveryEvent[], projectId: string): Promise<Buffer> {
  // Loaded when a Parquet file is first written, not by every process that knows the kind.
  const { parquetWriteBuffer } = await import('hyparquet-writer');
  const col = <T>(f: (e: DeliveryEvent) => T): T[] => events.map(f);
  const out = parquetWriteBuffer({
    columnData: [
      { name: 'id', data: col((e) => e.id), type: 'STRING' },
      { name: 'project_id', data: col(() => projectId), type: 'STRING' },
      { name: 'source_id', data: col((e) => e.sourceId), type: 'STRING' },
      { name: 'event', data: col((e) => e.event), type: 'STRING' },
      { name: 'distinct_id', data: col((e) => e.distinctId), type: 'STRING' },
      { name: 'anonymous_id', data: col((e) => e.anonymousId), type: 'STRING' },
      { name: 'person_id', data: col((e) => e.personId), type: 'STRING' },
      { name: 'session_id', data: col((e) => e.sessionId), type: 'STRING' },
      { name: 'server_session', data: col((e) => e.sessionId === null), type: 'BOOLEAN' },
      { name: 'timestamp', data: col((e) => new Date(e.timestamp)), type: 'TIMESTAMP' },
      { name: 'received_at', data: col((e) => new Date(e.receivedAt)), type: 'TIMESTAMP' },
      { name: 'insert_id', data: col((e) => e.insertId), type: 'STRING' },
      // The writer encodes a JSON column's values itself: given the stored text, it wrote a JSON string
      // holding the text, which DuckDB and pyarrow read as a string literal rather than the object.
      // The stored text is JSON.stringify's own (bodies are parsed on intake), so this gives it back unchanged.
      { name: 'properties', data: col((e) => JSON.parse(e.properties) as unknown), type: 'JSON' },
    ],
  });
  return Buffer.from(out);
}
