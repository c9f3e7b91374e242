import { describe, expect, it } from 'vitest';
import { type Row, combineHalves, pacingNote, perEventUs, short } from './measure.js';
import { heldCell } from './report.js';

function half(over: Partial<Row>): Row {
  return {
    system: 'http baseline',
    workload: 'big',
    label: 'big',
    servers: 1,
    storedAtStart: 0,
    seconds: 5,
    requests: 0,
    eventsPerSec: 0,
    requestsPerSec: 0,
    p50Ms: 1,
    p90Ms: 2,
    p99Ms: 3,
    maxMs: 4,
    non2xx: 0,
    rateLimited: 0,
    errors: 0,
    timeouts: 0,
    accepted: 0,
    duplicates: 0,
    refusedItems: 0,
    droppedItems: 0,
    loadgenCpuSec: 0,
    itemsPerRequest: 500,
    connections: 8,
    peakRssMiB: 60,
    serverCpuSec: 0,
    serverUsPerEvent: 0,
    dbCpuSec: null,
    dbUsPerEvent: null,
    poolWraps: 0,
    otherCpuSec: 0,
    ...over,
  };
}

describe('combineHalves', () => {
  it('weighs each half by its own time, not equally', () => {
    const a = half({ seconds: 4, requests: 400, requestsPerSec: 100, eventsPerSec: 50_000, serverCpuSec: 1, requestUsPerEvent: 2 });
    const b = half({ seconds: 6, requests: 1200, requestsPerSec: 200, eventsPerSec: 100_000, serverCpuSec: 2, requestUsPerEvent: 3 });
    const c = combineHalves(a, b);
    expect(c.seconds).toBe(10);
    expect(c.requests).toBe(1600);
    expect(c.requestsPerSec).toBe(160);
    // 200,000 + 600,000 events over 10 s.
    expect(c.eventsPerSec).toBe(80_000);
    expect(c.serverUsPerEvent).toBeCloseTo((3 / 800_000) * 1e6);
    // The request thread's too: 0.4 s and 1.8 s over the 800,000 events.
    expect(c.requestUsPerEvent).toBeCloseTo(2.75);
    expect(combineHalves(a, half({ ...b, requestUsPerEvent: null })).requestUsPerEvent).toBeNull();
    expect(c.halvesEventsPerSec).toEqual([50_000, 100_000]);
  });

  it('keeps the worse latency and memory of the two, and adds up counts', () => {
    const c = combineHalves(
      half({ p50Ms: 2, p99Ms: 30, maxMs: 90, peakRssMiB: 70, non2xx: 1, rateLimited: 1, errors: 2, loadgenCpuSec: 1.5, otherCpuSec: 0.2 }),
      half({ p50Ms: 5, p99Ms: 20, maxMs: 40, peakRssMiB: 65, non2xx: 3, rateLimited: 2, timeouts: 1, loadgenCpuSec: 2, otherCpuSec: 0.1, firstRefusal: '503 x' }),
    );
    expect([c.p50Ms, c.p99Ms, c.maxMs, c.peakRssMiB]).toEqual([5, 30, 90, 70]);
    expect([c.non2xx, c.rateLimited, c.errors, c.timeouts]).toEqual([4, 3, 2, 1]);
    expect(c.loadgenCpuSec).toBeCloseTo(3.5);
    expect(c.otherCpuSec).toBeCloseTo(0.3);
    expect(c.firstRefusal).toBe('503 x');
  });

  it('adds up the item counts and pool rounds, and keeps the first refusal of the first half', () => {
    const c = combineHalves(
      half({ accepted: 10, duplicates: 1, refusedItems: 2, droppedItems: 3, poolWraps: 1, firstRefusal: '400 first' }),
      half({ accepted: 20, duplicates: 4, refusedItems: 5, droppedItems: 6, poolWraps: 2, firstRefusal: '503 second' }),
    );
    expect([c.accepted, c.duplicates, c.refusedItems, c.droppedItems, c.poolWraps]).toEqual([30, 5, 7, 9, 3]);
    expect(c.firstRefusal).toBe('400 first');
  });

  it('gives zero rates, not NaN, when no time or no event was measured', () => {
    const c = combineHalves(half({ seconds: 0 }), half({ seconds: 0 }));
    expect(c.eventsPerSec).toBe(0);
    expect(c.requestsPerSec).toBe(0);
    expect(c.serverUsPerEvent).toBe(0);
  });

  it("adds up PostgreSQL's CPU when both halves have it, and has none when either lacks it", () => {
    const both = combineHalves(half({ eventsPerSec: 100, dbCpuSec: 0.001 }), half({ eventsPerSec: 100, dbCpuSec: 0.002 }));
    expect(both.dbCpuSec).toBeCloseTo(0.003);
    expect(both.dbUsPerEvent).toBeCloseTo((0.003 / 1000) * 1e6);
    expect(combineHalves(half({ dbCpuSec: 1 }), half({})).dbUsPerEvent).toBeNull();
  });
});

describe('perEventUs', () => {
  it('is CPU seconds per million events, and 0 without events', () => {
    expect(perEventUs(2, 100_000)).toBeCloseTo(20);
    expect(perEventUs(2, 0)).toBe(0);
  });
});

describe('short', () => {
  it('writes millions and thousands the way the table labels them', () => {
    expect([short(5_000_000), short(5_250_000), short(200_000), short(999)]).toEqual(['5M', '5.3M', '200k', '999']);
  });
});

describe('a tenants row held back by the load generator', () => {
  it('is flagged in the table and noted, past 1% of its time waiting, so that the pacing is not read as the server\'s speed', () => {
    const paced = { heldBack: { skipped: 900, waitedMs: 40_000, share: 0.5 } };
    expect(heldCell(paced)).toBe('50 !');
    expect(pacingNote(paced)).toContain('measures that pacing, not the server');
    const free = { heldBack: { skipped: 0, waitedMs: 0, share: 0 } };
    expect(heldCell(free)).toBe('0');
    expect(pacingNote(free)).toBeNull();
    expect(heldCell({ heldBack: { skipped: 3, waitedMs: 40, share: 0.005 } })).toBe('0.5');
    expect(heldCell({})).toBe('');
  });
});
