import { describe, expect, it } from 'vitest';
import { maskUrl, pointsAtSelf, scrub } from './urls.js';

describe('destination URLs', () => {
  it('masks a password and secret parameters, and leaves the rest as typed', () => {
    expect(maskUrl('postgres://loader:pw%40x@db:5432/w?sslmode=require&password=p2')).toBe('postgres://loader:***@db:5432/w?sslmode=require&password=***');
    expect(maskUrl('https://example.com/hook?token=abc&x=1')).toBe('https://example.com/hook?token=***&x=1');
    expect(maskUrl('https://example.com/hook')).toBe('https://example.com/hook');
    expect(maskUrl('not a url')).toBe('***');
  });

  it('scrubs the password from any text, also decoded', () => {
    const url = 'postgres://loader:pw%40xyz@db/w';
    expect(scrub(`password authentication failed for pw@xyz at ${url}`, url)).toBe('password authentication failed for *** at postgres://loader:***@db/w');
  });

  it('knows its own server by the base URL, or a local address on its port', () => {
    const self = { baseUrl: 'https://inlet.example.com', port: 8080 };
    expect(pointsAtSelf('https://INLET.example.com./api/v1/batch', self)).toBe(true);
    expect(pointsAtSelf('http://127.0.0.1:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://localhost:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://[::1]:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://127.0.0.1:9000/x', self)).toBe(false);
    expect(pointsAtSelf('https://hooks.example.com/x', self)).toBe(false);
    expect(pointsAtSelf('http://inlet.example.com/x', self)).toBe(false);
  });
});
