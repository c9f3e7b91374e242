import { describe, expect, it } from 'vitest';
import { BYTES_PER_SOURCE, type LiveRequest, LiveWindow, WATCH_LINGER_MS, lineBytes } from './live-window.js';

const req = (id: string, items: number): LiveRequest => ({
  requestId: id,
  at: 1,
  status: 202,
  size: items,
  items: Array.from({ length: items }, (_, index) => ({
    index, outcome: 'accepted', type: 'track', event: 'e', distinctId: 'd', personId: null, timestamp: 1, code: null, field: null, message: null,
  })),
});

describe('LiveWindow', () => {
  it('keeps each source’s newest requests first, up to its item bound', () => {
    const w = new LiveWindow(10, 100);
    w.publish('s', req('a', 4));
    w.publish('s', req('b', 4));
    w.publish('s', req('c', 4));
    expect(w.recent('s').map((r) => r.requestId)).toEqual(['c', 'b']);
    w.publish('s', req('big', 50));
    expect(w.recent('s').map((r) => [r.requestId, r.items.length])).toEqual([['big', 10]]);
    expect(w.recent('other')).toEqual([]);
  });

  it('keeps at most its number of sources, dropping the one answered longest ago', () => {
    const w = new LiveWindow(10, 2);
    w.publish('a', req('1', 1));
    w.publish('b', req('2', 1));
    w.publish('a', req('3', 1));
    w.publish('c', req('4', 1));
    expect(w.size).toBe(2);
    expect(w.recent('b')).toEqual([]);
    expect(w.recent('a').map((r) => r.requestId)).toEqual(['3', '1']);
  });

  it('tells only the source’s watchers, until they stop, and a failing watcher fails nothing', () => {
    const w = new LiveWindow();
    const seen: string[] = [];
    const stop = w.subscribe('s', (r) => seen.push(r.requestId));
    w.subscribe('s', () => {
      throw new Error('connection gone');
    });
    w.publish('s', req('1', 1));
    w.publish('t', req('2', 1));
    stop();
    w.publish('s', req('3', 1));
    expect(seen).toEqual(['1']);
  });
});

describe('LiveWindow: only watched sources', () => {
  it('a source is watched while it has a stream, and for a while after its page was shown or its last stream ended', () => {
    let now = 1_000;
    const w = new LiveWindow(10, 100, () => now);
    expect(w.watched('s')).toBe(false);
    const stop = w.subscribe('s', () => undefined);
    expect(w.watched('s')).toBe(true);
    now += 10 * WATCH_LINGER_MS;
    expect(w.watched('s')).toBe(true);
    stop();
    // A reload ends the stream before the next begins: what comes between is still kept.
    expect(w.watched('s')).toBe(true);
    now += WATCH_LINGER_MS - 1;
    expect(w.watched('s')).toBe(true);
    now += 1;
    expect(w.watched('s')).toBe(false);
    // A page shown starts a watch before its script subscribes.
    expect(w.show('t')).toEqual([]);
    expect(w.watched('t')).toBe(true);
    expect(w.watched('u')).toBe(false);
  });

  it('a source no longer watched loses what was kept: a later page does not show it as the latest', () => {
    let now = 1_000;
    const w = new LiveWindow(10, 100, () => now);
    w.show('s');
    w.publish('s', req('old', 1));
    expect(w.show('s').map((r) => r.requestId)).toEqual(['old']);
    now += WATCH_LINGER_MS;
    expect(w.show('s')).toEqual([]);
  });

  it('keeps at most its number of sources watched without a stream', () => {
    const w = new LiveWindow(10, 2, () => 0);
    w.show('a');
    w.show('b');
    w.show('c');
    expect(['a', 'b', 'c'].map((s) => w.watched(s))).toEqual([false, true, true]);
  });
});

describe('LiveWindow: bounded in bytes', () => {
  const refused = (id: string, lines: number, text: string): LiveRequest => ({
    requestId: id,
    at: 1,
    status: 400,
    size: lines,
    items: Array.from({ length: lines }, (_, index) => ({
      index, outcome: 'refused', type: null, event: text, distinctId: text, personId: null, timestamp: null, code: 'reserved_property', field: `properties.${text}`, message: text,
    })),
  });
  const kept = (w: LiveWindow, s: string) => w.recent(s).reduce((n, r) => n + r.items.reduce((m, i) => m + lineBytes(r, i), 0), 0);

  it('fault: lines of any length were kept whole, 500 to a source; each line’s texts are cut and a source keeps at most its bytes', () => {
    const w = new LiveWindow();
    const huge = '$' + 'k'.repeat(900_000);
    for (let i = 0; i < 20; i++) w.publish('s', refused(`r${i}`, 1, huge));
    for (const r of w.recent('s')) for (const i of r.items) expect((i.message ?? '').length + (i.field ?? '').length).toBeLessThan(1000);
    w.publish('s', refused('many', 500, '"'.repeat(5000)));
    expect(kept(w, 's')).toBeLessThanOrEqual(BYTES_PER_SOURCE);
    expect(w.bytes).toBe(kept(w, 's'));
    // The request too large alone keeps its first lines.
    expect(w.recent('s').map((r) => r.requestId)).toEqual(['many']);
    expect(w.recent('s')[0]!.items[0]!.index).toBe(0);
  });

  it('keeps a 500-item request of ordinary lines whole', () => {
    const w = new LiveWindow();
    const r = req('full', 500);
    for (const i of r.items) Object.assign(i, { event: 'checkout_completed', distinctId: 'user_1234567890', personId: 'per_01HZX3K9Q2W8E7R6T5Y4U3I2O1' });
    w.publish('s', r);
    expect(w.recent('s')[0]!.items).toHaveLength(500);
  });

  it('all sources together keep at most their bytes; the source answered longest ago leaves first', () => {
    const w = new LiveWindow(500, 1000, Date.now, 64 * 1024, 200 * 1024);
    const text = 'x'.repeat(400);
    for (let s = 0; s < 10; s++) w.publish(`s${s}`, refused(`r${s}`, 100, text));
    expect(w.bytes).toBeLessThanOrEqual(200 * 1024);
    expect(w.recent('s9')).toHaveLength(1);
    expect(w.recent('s0')).toEqual([]);
    expect(w.bytes).toBe(Array.from({ length: 10 }, (_, s) => kept(w, `s${s}`)).reduce((a, b) => a + b, 0));
  });
});
