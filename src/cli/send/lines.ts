import type { Readable } from 'node:stream';

/** A line of the input, and the byte offset just past it (its newline included): where a resumed send starts. */
export interface Line {
  text: string;
  end: number;
}

/**
 * The lines of a byte stream, each with the offset it ends at, counted from
 * `start` (where the stream was opened). Lines end at "\n"; a "\r" before it
 * is not part of the line. The stream is read as it is consumed, so a slow
 * consumer holds back the reading.
 */
export async function* linesOf(input: Readable, start = 0): AsyncGenerator<Line> {
  let carry: Buffer[] = [];
  let offset = start;
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let from = 0;
    for (let nl = bytes.indexOf(10, from); nl !== -1; nl = bytes.indexOf(10, from)) {
      const piece = bytes.subarray(from, nl);
      const whole = carry.length === 0 ? piece : Buffer.concat([...carry, piece]);
      carry = [];
      offset += whole.length + 1;
      from = nl + 1;
      yield { text: decode(whole), end: offset };
    }
    if (from < bytes.length) carry.push(bytes.subarray(from));
  }
  if (carry.length > 0) {
    const whole = Buffer.concat(carry);
    offset += whole.length;
    yield { text: decode(whole), end: offset };
  }
}

function decode(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return text.endsWith('\r') ? text.slice(0, -1) : text;
}
