import { describe, expect, it } from 'vitest';
import { type LiveRequest, LiveWindow, WATCH_LINGER_MS } from './live-window.js';

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
