import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Acknowledged } from './acknowledged.js';
import { linesOf } from './lines.js';

async function all(chunks: string[], start = 0) {
  const out = [];
  for await (const l of linesOf(Readable.from(chunks.map((c) => Buffer.from(c))), start)) out.push(l);
  return out;
}

describe('linesOf', () => {
  it('splits on newlines across chunks, drops a CR before one, and says where each line ends in bytes', async () => {
    expect(await all(['{"a":"é"}\r\n{"b"', ':2}\n\nlast'])).toEqual([
      { text: '{"a":"é"}', end: 12 },
      { text: '{"b":2}', end: 20 },
      { text: '', end: 21 },
      { text: 'last', end: 25 },
    ]);
    expect(await all(['x\n'], 100)).toEqual([{ text: 'x', end: 102 }]);
  });
});

describe('Acknowledged', () => {
  it('moves on only over lines that all have their outcome, whatever the order they settle in', () => {
    const a = new Acknowledged();
    for (let line = 1; line <= 4; line++) a.read(line, line * 10);
    a.settle(2);
    expect([a.line, a.offset]).toEqual([0, 0]);
    a.settle(1);
    expect([a.line, a.offset]).toEqual([2, 20]);
    a.settle(4);
    expect([a.line, a.offset]).toEqual([2, 20]);
    a.settle(3);
    expect([a.line, a.offset]).toEqual([4, 40]);
  });
});
