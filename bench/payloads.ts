import { gzipSync } from 'node:zlib';
import { Random } from './random.js';

/** A set of distinct request bodies, generated once, sent in order. */
export interface BodyPool {
  name: string;
  itemsPerBody: number;
  gzip: boolean;
  /** The JSON of each body. */
  raw: Buffer[];
  /** What goes on the wire in the first round: `raw`, or `raw` gzipped. */
  wire: Buffer[];
  /** Byte offsets, per body, of the round character inside every insert_id. */
  roundAt: Int32Array[];
  /** Where the round character sits inside an insert_id. */
  roundIndex: number;
  items: number;
  repeats: number;
  identifies: number;
  userAgents: number;
  jsonBytes: number;
}

export interface PoolSpec {
  name: string;
  /** Distinct insert_id namespace, so pools never repeat each other's ids. */
  prefix: string;
  seed: number;
  bodies: number;
  itemsPerBody: number;
  gzip: boolean;
  /** Every timestamp lies up to `spanMs` (default an hour) before this. */
  now: number;
  spanMs?: number;
}

export const USERS = 10_000;
export const REPEAT_SHARE = 0.05;
const IDENTIFY_SHARE = 0.1;
const USER_AGENT_SHARE = 0.1;
/** Repeats copy an item sent recently, as a client retrying a batch would. */
const REPEAT_WINDOW_ITEMS = 10_000;

/**
 * Each round re-sends the pool with this character changed in every insert_id,
 * so a long run never turns into a stream of duplicates. These are the 64
 * characters an insert_id may hold; past 64 rounds the ids come round again.
 */
export const ROUNDS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-';

const EVENTS = [
  'invoice_paid',
  'subscription_renewed',
  'export_completed',
  'job_finished',
  'seat_added',
  'api_request',
  'report_viewed',
] as const;

// Real browsers only: a bot would be dropped by the source's filter and the
// run would then measure fewer stored rows than it claims.
const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51',
];

const PLANS = ['free', 'starter', 'pro', 'business'] as const;
const INSERT_ID_FIELD = '"insert_id":"';

interface Item {
  json: string;
  insertId: string;
}

/** Generates a pool: the same spec gives byte-identical bodies on every run. */
export function generatePool(spec: PoolSpec): BodyPool {
  const rnd = new Random(spec.seed);
  const recent: Item[] = [];
  const pool: BodyPool = {
    name: spec.name,
    itemsPerBody: spec.itemsPerBody,
    gzip: spec.gzip,
    raw: [],
    wire: [],
    roundAt: [],
    roundIndex: spec.prefix.length,
    items: 0,
    repeats: 0,
    identifies: 0,
    userAgents: 0,
    jsonBytes: 0,
  };
  let seq = 0;
  for (let b = 0; b < spec.bodies; b++) {
    const items: Item[] = [];
    const ids = new Set<string>();
    for (let i = 0; i < spec.itemsPerBody; i++) {
      let item: Item | null = null;
      if (recent.length > 0 && rnd.chance(REPEAT_SHARE)) {
        // One insert_id twice in a request is refused (duplicate_insert_id), not
        // answered as a repeat, so a retry repeats items of earlier requests only.
        for (let attempt = 0; attempt < 5 && item === null; attempt++) {
          const old = rnd.pick(recent);
          if (!ids.has(old.insertId)) item = old;
        }
        if (item !== null) pool.repeats++;
      }
      if (item === null) {
        item = newItem(rnd, spec, seq++, pool);
        // Only new items: one copy per item in the window keeps repeats at 5%.
        if (recent.length >= REPEAT_WINDOW_ITEMS) recent[rnd.int(recent.length)] = item;
        else recent.push(item);
      }
      ids.add(item.insertId);
      items.push(item);
    }
    const text = `{"items":[${items.map((x) => x.json).join(',')}]}`;
    const raw = Buffer.from(text, 'utf8');
    pool.raw.push(raw);
    pool.wire.push(spec.gzip ? gzipSync(raw) : raw);
    pool.roundAt.push(roundOffsets(text, spec.prefix.length));
    pool.items += items.length;
    pool.jsonBytes += items.reduce((n, x) => n + x.json.length, 0);
  }
  return pool;
}

function newItem(rnd: Random, spec: PoolSpec, seq: number, pool: BodyPool): Item {
  const user = rnd.int(USERS);
  const distinctId = `user_${String(user).padStart(5, '0')}`;
  // A UUID-sized id, as most clients send: prefix, round, sequence, noise.
  const insertId = `${spec.prefix}${ROUNDS[0]}${seq.toString(36).padStart(7, '0')}${rnd.token(14)}`;
  const ms = spec.now - rnd.int(spec.spanMs ?? 3_600_000);
  // Clients send both forms the API accepts.
  const timestamp = rnd.chance(0.3) ? new Date(ms).toISOString() : ms;
  let obj: Record<string, unknown>;
  if (rnd.chance(IDENTIFY_SHARE)) {
    pool.identifies++;
    obj = {
      type: 'identify',
      distinct_id: distinctId,
      insert_id: insertId,
      timestamp,
      properties: { email: `u${user}@example.com`, plan: rnd.pick(PLANS), company: `Company ${user % 800}`, seats: 1 + rnd.int(50) },
    };
  } else {
    const event = rnd.pick(EVENTS);
    const properties = trackProperties(rnd, event);
    if (rnd.chance(USER_AGENT_SHARE)) {
      properties.$user_agent = rnd.pick(USER_AGENTS);
      pool.userAgents++;
    }
    obj = { event, distinct_id: distinctId, insert_id: insertId, timestamp, properties };
  }
  return { json: JSON.stringify(obj), insertId };
}

function trackProperties(rnd: Random, event: (typeof EVENTS)[number]): Record<string, unknown> {
  switch (event) {
    case 'invoice_paid':
      return { invoice_id: `inv_${rnd.token(10)}`, plan: rnd.pick(PLANS), $revenue: (10 + rnd.int(990)) / 10, $currency: rnd.pick(['EUR', 'USD', 'GBP']) };
    case 'subscription_renewed':
      return { plan: rnd.pick(PLANS), seats: 1 + rnd.int(200), interval: rnd.pick(['month', 'year']) };
    case 'export_completed':
      return { export_id: `exp_${rnd.token(8)}`, format: rnd.pick(['csv', 'json', 'xlsx']), rows: rnd.int(100_000), duration_ms: rnd.int(30_000) };
    case 'job_finished':
      return { job: rnd.pick(['sync_crm', 'send_digest', 'rebuild_index']), status: rnd.pick(['ok', 'ok', 'ok', 'retry']), attempt: 1 + rnd.int(3), duration_ms: rnd.int(60_000) };
    case 'seat_added':
      return { seats: 1 + rnd.int(200), role: rnd.pick(['admin', 'member', 'viewer']) };
    case 'api_request':
      return { endpoint: rnd.pick(['/v1/orders', '/v1/customers', '/v1/invoices']), method: rnd.pick(['GET', 'POST']), status: rnd.pick([200, 200, 201, 404]), duration_ms: rnd.int(900) };
    case 'report_viewed':
      return { report: rnd.pick(['revenue', 'churn', 'cohorts']), $current_url: `https://app.example.com/reports/${rnd.token(6)}` };
  }
}

function roundOffsets(text: string, roundIndex: number): Int32Array {
  const at: number[] = [];
  for (let i = text.indexOf(INSERT_ID_FIELD); i !== -1; i = text.indexOf(INSERT_ID_FIELD, i + 1)) {
    at.push(i + INSERT_ID_FIELD.length + roundIndex);
  }
  return Int32Array.from(at);
}

/**
 * Body `k` of the pool as sent in round `round` (the round character of every
 * insert_id set to ROUNDS[round]), and with `slot` (a character of ROUNDS) in
 * the place just before it: pools generated with a prefix ending in a spare
 * character give each tenant insert_ids of its own that way.
 */
export function bodyAt(pool: BodyPool, k: number, round: number, slot?: string): Buffer {
  if (round === 0 && slot === undefined) return pool.wire[k]!;
  const body = Buffer.from(pool.raw[k]!);
  const c = ROUNDS.charCodeAt(round % ROUNDS.length);
  const s = slot === undefined ? -1 : slot.charCodeAt(0);
  for (const at of pool.roundAt[k]!) {
    body[at] = c;
    if (s !== -1) body[at - 1] = s;
  }
  return pool.gzip ? gzipSync(body) : body;
}

/** Hands out the pool's bodies in order, in fresh rounds once it has gone through them all. */
export class BodyCursor {
  private sent = 0;

  /**
   * `freshIds: false` cycles through the pool as it is: for a server that
   * stores nothing, where patching (and re-gzipping) each body would only
   * slow the load generator down.
   */
  constructor(
    readonly pool: BodyPool,
    private readonly freshIds = true,
  ) {}

  /** How many times the pool was gone through and re-sent with new insert_ids. */
  get wraps(): number {
    return Math.floor(this.sent / this.pool.raw.length);
  }

  /** A cursor at the same place: it sends what this one would send next. */
  copy(): BodyCursor {
    const c = new BodyCursor(this.pool, this.freshIds);
    c.sent = this.sent;
    return c;
  }

  next(): Buffer {
    const n = this.pool.raw.length;
    const round = Math.floor(this.sent / n) % ROUNDS.length;
    const k = this.sent % n;
    this.sent++;
    return bodyAt(this.pool, k, this.freshIds ? round : 0);
  }
}
