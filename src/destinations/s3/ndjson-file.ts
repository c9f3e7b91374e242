import { constants, crc32, deflateRawSync } from 'node:zlib';
import type { DeliveryEvent, FileMaker } from '../../stores/port-destinations.js';

/** A gzip member's header: deflate, no name or time, made on Unix (as gzipSync writes it). */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
/** The lines zipped at a time: each part is compressed on its own, so a part shorter than this costs ratio. */
export const PART_CHARS = 1024 * 1024;
const LEVEL = 6;

/**
 * NDJSON, gzipped as it is made: one event a line, as webhook requests
 * carry them, zipped a part (about PART_CHARS of lines) at a time, so only
 * the zipped bytes of the file so far and the lines of one part are held.
 *
 * Each part is deflated on its own and ended with a sync flush (which ends
 * on a byte boundary and leaves the stream open), the last one followed by
 * an empty final block: the parts, end to end, are one deflate stream, in
 * one gzip member with the CRC and length of all the lines, which any gzip
 * reader takes (a file of several members some readers stop at the first).
 * Zipped on the calling thread (the delivery thread, at the lowest
 * priority): the asynchronous zlib would run on libuv's pool, at the
 * priority of the threads that take batches in.
 */
export class NdjsonGzipFile implements FileMaker {
  private readonly parts: Buffer[] = [HEADER];
  private lines: string[] = [];
  private chars = 0;
  private crc = 0;
  private length = 0;

  constructor(private readonly partChars = PART_CHARS) {}

  add(_e: DeliveryEvent, json: string): void {
    this.lines.push(json);
    this.chars += json.length + 1;
    if (this.chars >= this.partChars) this.zipPart();
  }

  async finish(): Promise<Buffer> {
    this.zipPart();
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(this.crc >>> 0, 0);
    trailer.writeUInt32LE(this.length % 2 ** 32, 4);
    this.parts.push(deflateRawSync(Buffer.alloc(0), { level: LEVEL }), trailer);
    return Buffer.concat(this.parts);
  }

  private zipPart(): void {
    if (this.lines.length === 0) return;
    const text = Buffer.from(`${this.lines.join('\n')}\n`);
    this.lines = [];
    this.chars = 0;
    this.crc = crc32(text, this.crc);
    this.length += text.length;
    this.parts.push(deflateRawSync(text, { level: LEVEL, finishFlush: constants.Z_SYNC_FLUSH }));
  }
}
