/**
 * A check thread (check-threads.ts): reads, checks and enriches each body the
 * main thread sends, or finds the key of one whose key is inside it, and
 * sends back what it made of it, packed for the way back. It keeps nothing
 * between bodies but the plan versions it compiled (domain/plans/check.ts),
 * which the main thread may also ask it to compile ahead of any body
 * (`prepare`).
 */
import { parentPort } from 'node:worker_threads';
import { checkBatch, readBatch, readyContext } from '../pipeline/checked-batch.js';
import { packBatch, packItems } from '../pipeline/item-transfer.js';
import type { WireMap } from '../pipeline/foreign-body.js';
import { isRefusal } from '../domain/intake/refusal.js';
import { compiledKeys, compiledKeysSettled, compiledPlanFor } from '../domain/plans/check.js';
import type { CheckReply, CheckRequest } from './check-threads.js';

const port = parentPort!;

/**
 * The other APIs' shapes, loaded with the first body in one: a server that
 * takes only batches keeps the thread's heap as small as it was (its cap is
 * set tight, check-threads.ts).
 */
let foreign: { body: typeof import('../pipeline/foreign-body.js'); wireOf: (intake: string) => WireMap } | null = null;

async function loadForeign(): Promise<NonNullable<typeof foreign>> {
  const [body, registry] = await Promise.all([import('../pipeline/foreign-body.js'), import('./registry.js')]);
  return { body, wireOf: registry.wireOf };
}

port.on('message', (m: CheckRequest) => {
  const transfer: ArrayBuffer[] = [];
  let reply: CheckReply | Promise<CheckReply>;
  try {
    reply = answer(m, transfer);
  } catch {
    reply = { id: m.id, failed: true };
  }
  // A body whose checks need nothing loaded or compiled is answered in this turn, without a promise.
  if (!(reply instanceof Promise)) port.postMessage(reply, transfer);
  else reply.catch((): CheckReply => ({ id: m.id, failed: true })).then((r) => port.postMessage(r, transfer));
});

/** `value`, or what it resolves to, given to `f`: at once when it is no promise. */
function then<T, R>(value: T | Promise<T>, f: (v: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(f) : f(value);
}

/** The reply to a request; a failure (thrown or rejected) is answered `failed`: the main thread checks the body itself, and fails there as it would have (or refuses it, its key unknown). */
function answer(m: CheckRequest, transfer: ArrayBuffer[]): CheckReply | Promise<CheckReply> {
  const { id } = m;
  switch (m.kind) {
    case 'prepare':
      return compiledPlanFor(m.plan).then(() => ({ id, prepared: compiledKeys() }));
    case 'held':
      return compiledKeysSettled().then((keys) => ({ id, prepared: keys }));
    case 'batch': {
      const batch = readBatch(m.bytes);
      if (isRefusal(batch)) return { id, refusal: batch };
      return then(readyContext(m.ctx), (ctx) => ({ id, batch: packBatch(checkBatch(batch.items, batch.droppedKeys, ctx)) }));
    }
    case 'messages':
      return then(foreign ?? loadForeign(), (f) => {
        foreign = f;
        const mapped = f.body.readMessages(m.bytes, f.wireOf(m.shape.intake), m.shape, m.ctx.now);
        if (isRefusal(mapped)) return { id, refusal: mapped };
        return then(readyContext(m.ctx), (ctx) => {
          const checked = f.body.checkMessages(mapped, ctx);
          return { id, messages: { batch: packBatch(checked.batch), updates: packItems(checked.updates) } };
        });
      });
    case 'key':
      return then(foreign ?? loadForeign(), (f): CheckReply => {
        foreign = f;
        const found = f.body.findKey(m.bytes, m.gzip, f.wireOf(m.shape.intake));
        if (isRefusal(found)) return { id, refusal: found };
        // The JSON goes back without a copy when it is alone in its buffer (a small gunzip output may share Node's pool).
        const whole = found.json.byteOffset === 0 && found.json.byteLength === found.json.buffer.byteLength;
        const json = whole ? found.json : new Uint8Array(found.json);
        transfer.push(json.buffer as ArrayBuffer);
        return found.intake === undefined ? { id, key: found.key, json } : { id, key: found.key, json, intake: found.intake };
      });
  }
}
