import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { sha256 } from './sha256.js';

it('sha256 gives the standard digest, UTF-8 text included', () => {
  expect(sha256('abc').toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  for (const text of ['', 'srv_live_0123456789abcdefghijklmnopqrstuv', 'src_1\u0000order-é-😀']) {
    expect(sha256(text).equals(createHash('sha256').update(text).digest())).toBe(true);
  }
});
