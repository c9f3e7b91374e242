/**
 * The password thread (password-thread.ts): derives each scrypt key it is
 * sent, synchronously on this thread, so a hash never takes one of libuv's
 * shared threads. It keeps nothing between requests.
 */
import { scryptSync } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import type { DeriveReply, DeriveRequest } from './password-thread.js';

const port = parentPort!;

port.on('message', ({ id, password, salt, keyLength, options }: DeriveRequest) => {
  let reply: DeriveReply;
  try {
    const key = scryptSync(password, salt, keyLength, options);
    reply = { id, key };
  } catch (e) {
    // scrypt's own errors name its parameters, never the password.
    reply = { id, error: e instanceof Error ? e.message : String(e) };
  }
  port.postMessage(reply);
});
