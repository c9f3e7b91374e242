import { describe, expect, it } from 'vitest';
import { table } from './context.js';
import { MIN_CUT_COLUMN, PIPE_COLUMNS, cutTo, outputColumns } from './output-width.js';

describe('outputColumns', () => {
  it("is the terminal's width on a terminal, else COLUMNS, else a fixed default", () => {
    expect(outputColumns({ isTTY: true, columns: 93 }, { COLUMNS: '40' })).toBe(93);
    expect(outputColumns({ isTTY: false }, { COLUMNS: '140' })).toBe(140);
    expect(outputColumns({}, {})).toBe(PIPE_COLUMNS);
    for (const bad of ['', '0', '-3', 'wide', '1.5']) expect(outputColumns({}, { COLUMNS: bad }), bad).toBe(PIPE_COLUMNS);
  });
});

describe('cutTo', () => {
  it('keeps what fits, and ends what does not with an ellipsis, counting code points', () => {
    expect(cutTo('{"a":1}', 7)).toBe('{"a":1}');
    expect(cutTo('{"a":12}', 7)).toBe('{"a":1…');
    expect(cutTo('😀😀😀', 2)).toBe('😀…');
  });
});

describe('table with a width', () => {
  const rows = [
    ['ID', 'EVENT', 'PROPERTIES'],
    ['1', 'paid', '{"amount":129.5,"$currency":"EUR","note":"a long note that goes on and on"}'],
    ['2', 'refunded', '{}'],
  ];

  it('cuts the last column so that every line fits', () => {
    const out = table(rows, 50).split('\n');
    for (const line of out) expect(line.length).toBeLessThanOrEqual(50);
    expect(out[1]).toBe(`1   paid      ${'{"amount":129.5,"$currency":"EUR","note":"a long note that goes on and on"}'.slice(0, 35)}…`);
    expect(out[2]).toBe('2   refunded  {}');
  });

  it('keeps at least a few characters of it on a terminal too narrow for the rest', () => {
    const out = table(rows, 10).split('\n');
    expect(out[1]!.length).toBe('1   paid      '.length + MIN_CUT_COLUMN);
  });

  it('without a width, is as before', () => {
    expect(table(rows).split('\n')[1]).toBe(`1   paid      ${rows[1]![2]}`);
  });
});
