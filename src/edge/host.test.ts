import { describe, expect, it } from 'vitest';
import { normaliseHost } from './host.js';

describe('normaliseHost', () => {
  it('tracker hosts can be spelled around: every spelling of one name normalises to it', () => {
    for (const spelling of [
      't.example.com',
      'T.Example.COM',
      't.example.com.',
      't.example.com.:80',
      't.example.com:8080',
      '[t.example.com]',
      '[t.example.com]:443',
      ' t.example.com ',
      't.example.com..',
      't\u3002example\u3002com\u3002',
    ]) {
      expect(normaliseHost(spelling), spelling).toBe('t.example.com');
    }
  });

  it('keeps addresses apart and international names in ASCII', () => {
    expect(normaliseHost('127.0.0.1:8080')).toBe('127.0.0.1');
    expect(normaliseHost('[::1]:8080')).toBe('::1');
    expect(normaliseHost('::1')).toBe('::1');
    expect(normaliseHost('T.Exämple.com')).toBe('t.xn--exmple-cua.com');
    expect(normaliseHost(undefined)).toBe('');
  });

  it('answers a Host asked before as it did the first time, however many others came between', () => {
    const firsts = ['T.Example.com.:80', '[::1]:8080', 'T.Exämple.com', '', 'x'.repeat(300)].map((h) => [h, normaliseHost(h)] as const);
    for (let i = 0; i < 1000; i++) expect(normaliseHost(`H${i}.Example.com.`)).toBe(`h${i}.example.com`);
    for (const [h, first] of firsts) expect(normaliseHost(h), h).toBe(first);
    expect(firsts.map(([, n]) => n)).toEqual(['t.example.com', '::1', 't.xn--exmple-cua.com', '', 'x'.repeat(300)]);
  });
});
