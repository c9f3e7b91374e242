import { Worker } from 'node:worker_threads';
import { PageReadGate } from '../page-read-gate.js';
import { StoreUnavailableError } from '../port.js';
import type { PageReadReply, PageReadRequest, PageReadThreadData } from './page-read-thread.js';
import type { PageReads } from './page-reads.js';
import { threadEntry } from '../../thread-entry.js';

/**
 * Distinct page reads that may wait for the thread; more are refused
 * (PageReadsBusyError) rather than queued, so tabs reloading pages cannot
 * pile up work. Identical reads waiting share one answer.
 */
const WAITING_READS = 8;

/** The thread's file (page-read-thread.ts), compiled. */
const THREAD_URL = threadEntry('stores/sqlite/page-read-thread.js');

type Async<R> = { [K in keyof R]: R[K] extends (...a: infer A) => infer T ? (...a: A) => Promise<T> : never };

interface Thread {
  worker: Worker;
  waiting: Map<number, (r: PageReadReply | null) => void>;
}

/**
 * Runs the console's reads that scan (the chart's outcome counts, a
 * person's events) on one thread beside the main one,
 * one at a time, on a read-only connection (page-read-thread.ts). On the
 * main thread, a chart over 2.9 million events held it for 0.1 to 1 s per
 * load, and with it every batch; so does one over months of a project's
 * minutes of outcome counts (docs/design.md, "Page reads on a thread").
 * The thread starts with the first read, so a command that reads no page
 * never starts it; one that stops is started again by the next read.
 */
export class SqlitePageReader implements Async<PageReads> {
  private thread: Thread | null = null;
  private nextId = 0;
  private closed = false;
  readonly gate = new PageReadGate(1, WAITING_READS);

  constructor(private readonly file: string) {}

  rows(...args: Parameters<PageReads['rows']>): Promise<ReturnType<PageReads['rows']>> {
    return this.read({ read: 'rows', args }) as never;
  }

  countPersons(...args: Parameters<PageReads['countPersons']>): Promise<ReturnType<PageReads['countPersons']>> {
    return this.read({ read: 'countPersons', args }) as never;
  }

  /** Ends the thread; reads after this are refused. */
  async close(): Promise<void> {
    this.closed = true;
    await this.thread?.worker.terminate();
  }

  private read(r: Omit<PageReadRequest, 'id'>): Promise<unknown> {
    return this.gate.run(JSON.stringify(r), async () => {
      if (this.closed) throw new StoreUnavailableError('The store is closed.');
      const t = (this.thread ??= this.start());
      const id = this.nextId++;
      const reply = await new Promise<PageReadReply | null>((resolve) => {
        t.waiting.set(id, resolve);
        t.worker.postMessage({ ...r, id } as PageReadRequest);
      });
      if (reply === null) throw new StoreUnavailableError('The page-read thread stopped.');
      if ('failed' in reply) throw new StoreUnavailableError(`A page read failed: ${reply.failed}`);
      return reply.result;
    });
  }

  private start(): Thread {
    const worker = new Worker(THREAD_URL, { workerData: { file: this.file } satisfies PageReadThreadData });
    // Never keeps the process alive: the server's sockets and timers decide that.
    worker.unref();
    const thread: Thread = { worker, waiting: new Map() };
    worker.on('message', (m: PageReadReply) => {
      const settle = thread.waiting.get(m.id);
      thread.waiting.delete(m.id);
      settle?.(m);
    });
    // 'error' (a failure to open the file, a bug) is followed by 'exit'.
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      if (this.thread === thread) this.thread = null;
      for (const settle of thread.waiting.values()) settle(null);
      thread.waiting.clear();
    });
    return thread;
  }
}
