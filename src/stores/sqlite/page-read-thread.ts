/**
 * The page-read thread (see page-reader.ts), with a read-only connection of
 * its own. WAL lets it read while the server's connection commits, and it
 * keeps the read off the thread that answers requests: a chart that takes a
 * second to count delays no batch.
 *
 * Messages in: a PageReadRequest, one at a time. Out: a PageReadReply per request.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { type PageReads, pageReadsOn } from './page-reads.js';

/** What the reader hands the thread. */
export interface PageReadThreadData {
  file: string;
}

/** A read the thread runs: the name of a PageReads member and its arguments. */
export type PageReadRequest = {
  [K in keyof PageReads]: { id: number; read: K; args: Parameters<PageReads[K]> };
}[keyof PageReads];

/** The read's result, or the message of what failed. */
export type PageReadReply = { id: number } & ({ result: unknown } | { failed: string });

// Only when run as a thread: the reader imports this file for its types alone.
if (parentPort !== null) run(parentPort, workerData as PageReadThreadData);

function run(port: NonNullable<typeof parentPort>, data: PageReadThreadData): void {
  const db = new Database(data.file, { readonly: true, fileMustExist: true });
  // A reader waits only while the WAL is being recovered or reset, briefly.
  db.pragma('busy_timeout = 5000');
  const reads = pageReadsOn(db);
  port.on('message', (m: PageReadRequest) => {
    try {
      const result = (reads[m.read] as (...args: unknown[]) => unknown)(...m.args);
      port.postMessage({ id: m.id, result } satisfies PageReadReply);
    } catch (e) {
      port.postMessage({ id: m.id, failed: e instanceof Error ? e.message : String(e) } satisfies PageReadReply);
    }
  });
}
