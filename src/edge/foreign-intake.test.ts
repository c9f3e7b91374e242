import { expect, it } from 'vitest';
import { keyInBodyShare } from './foreign-intake.js';

it('an IPv4 client has one key-in-body share whether it arrives over IPv4 or as IPv4-mapped IPv6', () => {
  expect(keyInBodyShare('::ffff:10.0.0.7')).toEqual(keyInBodyShare('10.0.0.7'));
  expect(keyInBodyShare('::FFFF:10.0.0.7')).toEqual({ address: '10.0.0.7' });
  expect(keyInBodyShare('::1')).toEqual({ address: '::1' });
  expect(keyInBodyShare('10.0.0.8')).not.toEqual(keyInBodyShare('10.0.0.7'));
});
