import type { ParquetWriter } from 'hyparquet-writer';
import type { DeliveryEvent, FileMaker } from '../../stores/port-destinations.js';

/** A row group holds at most this many events… */
export const GROUP_ROWS = 25_000;
/** …and about this many characters of them: a file of a few huge events keeps few of them in memory as strings. */
const GROUP_CHARS = 16 * 1024 * 1024;

type Writer = typeof import('hyparquet-writer');
/** Loaded when a Parquet file is first made, not by every process that knows the kind. */
let writerModule: Promise<Writer> | null = null;

/** A column of the file: its name, its type, and how an event gives its value. */
interface Column {
  name: string;
  type: 'STRING' | 'BOOLEAN' | 'TIMESTAMP' | 'JSON';
  value: (e: DeliveryEvent, projectId: string) => unknown;
}

/**
 * The columns, typed: ids and names as strings, times as timestamps (ms,
 * UTC), server_session a boolean, the properties as JSON. The stored text
 * of the properties is held as it is and parsed only as its row group is
 * written: the writer encodes a JSON column's values itself (given the text,
 * it wrote a JSON string holding the text, which DuckDB and pyarrow read as a
 * string literal rather than the object), and the stored text is
 * JSON.stringify's own (bodies are parsed on intake), so this gives it back
 * unchanged.
 */
const COLUMNS: readonly Column[] = [
  { name: 'id', type: 'STRING', value: (e) => e.id },
  { name: 'project_id', type: 'STRING', value: (_e, projectId) => projectId },
  { name: 'source_id', type: 'STRING', value: (e) => e.sourceId },
  { name: 'event', type: 'STRING', value: (e) => e.event },
  { name: 'distinct_id', type: 'STRING', value: (e) => e.distinctId },
  { name: 'anonymous_id', type: 'STRING', value: (e) => e.anonymousId },
  { name: 'person_id', type: 'STRING', value: (e) => e.personId },
  { name: 'session_id', type: 'STRING', value: (e) => e.sessionId },
  { name: 'server_session', type: 'BOOLEAN', value: (e) => e.sessionId === null },
  { name: 'timestamp', type: 'TIMESTAMP', value: (e) => e.timestamp },
  { name: 'received_at', type: 'TIMESTAMP', value: (e) => e.receivedAt },
  { name: 'insert_id', type: 'STRING', value: (e) => e.insertId },
  { name: 'properties', type: 'JSON', value: (e) => e.properties },
];

/** A column's values as the writer takes them: times as Dates, properties parsed. */
function written(c: Column, values: unknown[]): unknown[] {
  if (c.type === 'TIMESTAMP') return values.map((v) => new Date(v as number));
  if (c.type === 'JSON') return values.map((v) => JSON.parse(v as string) as unknown);
  return values;
}

/**
 * Parquet, made a row group at a time (hyparquet-writer's ParquetWriter):
 * what is held is the file's bytes so far and the column values of the next
 * row group, never every event of the file.
 */
export class ParquetFile implements FileMaker {
  private readonly columns: unknown[][] = COLUMNS.map(() => []);
  private rows = 0;
  private chars = 0;

  private constructor(
    private readonly bytes: InstanceType<Writer['ByteWriter']>,
    private readonly writer: ParquetWriter,
    private readonly projectId: string,
    private readonly groupRows: number,
  ) {}

  static async open(projectId: string, groupRows = GROUP_ROWS): Promise<ParquetFile> {
    const lib = await (writerModule ??= import('hyparquet-writer'));
    const schema = lib.schemaFromColumnData({ columnData: COLUMNS.map((c) => ({ name: c.name, type: c.type, data: [] })) });
    const bytes = new lib.ByteWriter();
    return new ParquetFile(bytes, new lib.ParquetWriter({ writer: bytes, schema }), projectId, groupRows);
  }

  add(e: DeliveryEvent): void {
    for (let i = 0; i < COLUMNS.length; i++) this.columns[i]!.push(COLUMNS[i]!.value(e, this.projectId));
    this.rows++;
    this.chars += e.properties.length + e.id.length + e.event.length;
    if (this.rows >= this.groupRows || this.chars >= GROUP_CHARS) this.writeGroup();
  }

  async finish(): Promise<Buffer> {
    this.writeGroup();
    await this.writer.finish();
    return Buffer.from(this.bytes.getBuffer());
  }

  private writeGroup(): void {
    if (this.rows === 0) return;
    const columnData = COLUMNS.map((c, i) => ({ name: c.name, data: written(c, this.columns[i]!) }));
    // One group of all the rows given (the writer would split them by its own sizes); synchronous, into memory (ByteWriter).
    void this.writer.write({ columnData, rowGroupSize: this.rows });
    for (const col of this.columns) col.length = 0;
    this.rows = 0;
    this.chars = 0;
  }
}
