import { expect, it } from 'vitest';
import { keyInBodyShare } from './intake-pipeline.js';

it('an IPv4 client has one key-in-body share whether it arrives over IPv4 or as IPv4-mapped IPv6', () => {
  expect(keyInBodyShare('::ffff:10.0.0.7')).toEqual(keyInBodyShare('10.0.0.7'));
  expect(keyInBodyShare('::FFFF:10.0.0.7')).toEqual({ address: '10.0.0.7' });
  expect(keyInBodyShare('::1')).toEqual({ address: '0:0:0:0::/64' });
  expect(keyInBodyShare('10.0.0.8')).not.toEqual(keyInBodyShare('10.0.0.7'));
});

it('one IPv6 host could fill the keyless queue from the addresses of its /64: they are one share', () => {
  expect(keyInBodyShare('2001:db8:1:2::1')).toEqual(keyInBodyShare('2001:db8:1:2:ffff:ffff:ffff:fffe'));
  expect(keyInBodyShare('2001:db8:1:2::1')).toEqual({ address: '2001:db8:1:2::/64' });
  expect(keyInBodyShare('2001:db8:1:3::1')).not.toEqual(keyInBodyShare('2001:db8:1:2::1'));
});
