/**
 * A check thread (check-threads.ts): reads, checks and enriches each body the
 * main thread sends, and sends back what it made of it, packed for the way
 * back. It keeps nothing between bodies.
 */
import { parentPort } from 'node:worker_threads';
import { checkBatch, readBatch } from './checked-batch.js';
import { packBatch } from './item-transfer.js';
import { isRefusal } from './refusal.js';
import type { CheckReply, CheckRequest } from './check-threads.js';

const port = parentPort!;

port.on('message', ({ id, bytes, ctx }: CheckRequest) => {
  let reply: CheckReply;
  try {
    const batch = readBatch(bytes);
    reply = isRefusal(batch) ? { id, refusal: batch } : { id, batch: packBatch(checkBatch(batch.items, batch.droppedKeys, ctx)) };
  } catch {
    // The main thread checks the body itself, and fails there as it would have.
    reply = { id, failed: true };
  }
  port.postMessage(reply);
});
