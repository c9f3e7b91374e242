import { constants, crc32, deflateRawSync } from 'node:zlib';
import type { DeliveryEvent, FileMaker } from '../../stores/port-destinations.js';

/** A gzip member's header: deflate, no name or time, made on Unix (as gzipSync writes it). */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
/** The bytes of lines zipped at a time: each part is compressed on its own, so a part shorter than this costs ratio. */
export const PART_BYTES = 1024 * 1024;
/**
 * zlib's fastest strategy at its best ratio: at 6 (zlib's default) files of
 * `big`'s events were 11% smaller, and a webhook and an s3 destination cost
 * the delivery process 16.4–18.2 µs an event through the drain against
 * 14.0–15.6 at 3, in the delivery process that falls behind ingestion for
 * want of CPU (bench/README.md).
 */
const LEVEL = 3;
const NEWLINE = 0x0a;

/**
 * NDJSON, gzipped as it is made: one event a line, as webhook requests
 * carry them, zipped a part (about PART_BYTES of lines) at a time, so only
 * the zipped bytes of the file so far and the lines of one part are held.
 * Each line is written into the part's buffer as it is added, so its text
 * dies young: lines held as strings until their part was full outlived the
 * young generation, and V8's helper threads, which collect every thread's
 * garbage at normal priority, marked them beside ingestion.
 *
 * Each part is deflated on its own and ended with a sync flush (which ends
 * on a byte boundary and leaves the stream open), the last one followed by
 * an empty final block: the parts, end to end, are one deflate stream, in
 * one gzip member with the CRC and length of all the lines, which any gzip
 * reader takes (a file of several members some readers stop at the first).
 * Zipped on the calling thread (the delivery process's, at the lowest
 * priority): the asynchronous zlib would only add libuv's pool to it, and
 * a part takes a few milliseconds.
 */
export class NdjsonGzipFile implements FileMaker {
  private readonly parts: Buffer[] = [HEADER];
  /** The part being filled, reused for every part: deflateRawSync is done with it when it returns. */
  private readonly part: Buffer;
  private used = 0;
  private crc = 0;
  private length = 0;

  constructor(partBytes = PART_BYTES) {
    this.part = Buffer.allocUnsafe(partBytes);
  }

  add(_e: DeliveryEvent, json: string): void {
    // A UTF-16 unit takes at most 3 bytes in UTF-8: with that much room the line fits whole.
    const most = json.length * 3 + 1;
    if (most > this.part.length - this.used) this.zipPart();
    if (most > this.part.length) {
      this.zip(Buffer.from(`${json}\n`));
      return;
    }
    this.used += this.part.write(json, this.used);
    this.part[this.used++] = NEWLINE;
    if (this.used === this.part.length) this.zipPart();
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
    if (this.used === 0) return;
    this.zip(this.part.subarray(0, this.used));
    this.used = 0;
  }

  private zip(text: Buffer): void {
    this.crc = crc32(text, this.crc);
    this.length += text.length;
    this.parts.push(deflateRawSync(text, { level: LEVEL, finishFlush: constants.Z_SYNC_FLUSH }));
  }
}
