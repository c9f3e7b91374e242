/**
 * What a browser finds at the server's root (fault: the URL the server prints answered
 * the API's JSON 404, and every page's /favicon.ico was a 404 in the browser's console).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../helpers/fixture.js';

let f: Fixture;
beforeAll(async () => {
  f = await makeFixture();
});
afterAll(async () => {
  await f?.close();
});

describe('the root of the server', () => {
  it('GET / (and HEAD /) leads to the console, which leads on to sign-in', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const r = await f.app.inject({ method, url: '/' });
      expect(r.statusCode, method).toBe(302);
      expect(r.headers.location).toBe('/console');
      expect(r.headers['request-id']).toMatch(/^req_/);
    }
    const console = await f.app.inject({ method: 'GET', url: '/console' });
    expect(console.statusCode).toBe(303);
    expect(console.headers.location).toBe('/console/login');
  });

  it('GET /favicon.ico answers an icon, 16 and 32 pixels square', async () => {
    const r = await f.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('image/x-icon');
    const ico = r.rawPayload;
    // ICONDIR: reserved 0, type 1 (icon), then one 16-byte entry per image: width, height.
    expect([ico.readUInt16LE(0), ico.readUInt16LE(2), ico.readUInt16LE(4)]).toEqual([0, 1, 2]);
    expect([ico[6], ico[7], ico[22], ico[23]]).toEqual([16, 16, 32, 32]);
    for (const entry of [6, 22]) expect(ico.readUInt32LE(entry + 8) + ico.readUInt32LE(entry + 12)).toBeLessThanOrEqual(ico.length);
  });

  it('any other path outside the API still answers the JSON 404', async () => {
    const r = await f.app.inject({ method: 'GET', url: '/nothing-here' });
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('not_found');
    expect((await f.app.inject({ method: 'POST', url: '/' })).statusCode).toBe(404);
  });
});
