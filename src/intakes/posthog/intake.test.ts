import { expect, it } from 'vitest';
import { queryEncoding } from './intake.js';

it('reads gzip from ?compression=gzip-js, leaves no compression to Content-Encoding, and refuses others', () => {
  expect(queryEncoding('compression=gzip-js&ver=1.0')).toBe('gzip');
  expect(queryEncoding('ver=1.0')).toBeUndefined();
  expect(queryEncoding('compression=base64')).toMatchObject({ code: 'unsupported_encoding' });
});
