import { describe, expect, it } from 'vitest';
import { maskUrl, pointsAtSelf, scrub } from './urls.js';

describe('destination URLs', () => {
  it('URL masking leaves path secrets and query parameters visible: the path after the host, every query value and the password are masked', () => {
    expect(maskUrl('https://hooks.slack.com/services/T0AAA/B0BBB/XyZsecret123')).toBe('https://hooks.slack.com/***');
    expect(maskUrl('postgres://loader:pw%40x@db:5432/w?sslmode=require&password=p2')).toBe('postgres://loader:***@db:5432/***?sslmode=***&password=***');
    expect(maskUrl('https://example.com/hook?token=abc&x=1#frag')).toBe('https://example.com/***?token=***&x=***#***');
    // A token given as a web URL's user is hidden like a password.
    expect(maskUrl('https://sk_live_SECRETTOKEN@example.com:8443/')).toBe('https://***@example.com:8443/');
    expect(maskUrl('https://sk_live_SECRETTOKEN:x@example.com/')).toBe('https://***:***@example.com/');
    expect(scrub('401 for sk_live_SECRETTOKEN', 'https://sk_live_SECRETTOKEN@example.com/')).toBe('401 for ***');
    expect(maskUrl('http://[::1]:9000')).toBe('http://[::1]:9000/');
    expect(maskUrl('not a url')).toBe('***');
  });

  it('scrubs every masked part from any text, also decoded', () => {
    const url = 'postgres://loader:pw%40xyz@db/w';
    expect(scrub(`password authentication failed for pw@xyz at ${url}`, url)).toBe('password authentication failed for *** at postgres://loader:***@db/***');
    const slack = 'https://hooks.slack.com/services/T0AAA/B0BBB/XyZsecret123?k=s%20ecret';
    expect(scrub('rejected XyZsecret123 and s ecret', slack)).toBe('rejected *** and ***');
  });

  it('knows its own server by the base URL, or a local address on its port', () => {
    const self = { baseUrl: 'https://inlet.example.com', port: 8080 };
    expect(pointsAtSelf('https://INLET.example.com./api/v1/batch', self)).toBe(true);
    expect(pointsAtSelf('http://127.0.0.1:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://localhost:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://[::1]:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://[::ffff:127.0.0.1]:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://127.1.2.3:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://0.0.0.0:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://app.localhost:8080/x', self)).toBe(true);
    expect(pointsAtSelf('http://127.0.0.1:9000/x', self)).toBe(false);
    expect(pointsAtSelf('https://hooks.example.com/x', self)).toBe(false);
    expect(pointsAtSelf('http://inlet.example.com/x', self)).toBe(false);
  });
});
