import type { FileMaker, FilePlan } from '../../stores/port-destinations.js';
import { NdjsonGzipFile } from './ndjson-file.js';
import { ParquetFile } from './parquet-file.js';
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

/** A maker of one file in the format: NDJSON gzipped as it is made, or Parquet a row group at a time. */
export function fileMaker(format: FileFormat, projectId: string): Promise<FileMaker> {
  return format === 'ndjson' ? Promise.resolve(new NdjsonGzipFile()) : ParquetFile.open(projectId);
}
