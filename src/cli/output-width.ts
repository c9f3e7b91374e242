import { cliIo } from './io.js';

/** Columns a line may take when stdout is not a terminal (a pipe, a file) and COLUMNS says nothing. */
export const PIPE_COLUMNS = 200;

/** The least a column cut to fit is given, however narrow the terminal: enough to recognise it. */
export const MIN_CUT_COLUMN = 24;

/** How wide a line of human output may be: the terminal's width, else COLUMNS, else PIPE_COLUMNS. */
export function outputColumns(out: { isTTY?: boolean; columns?: number } = cliIo().stdout, env: Record<string, string | undefined> = cliIo().env): number {
  if (out.isTTY === true && out.columns !== undefined && out.columns > 0) return out.columns;
  const given = Number(env.COLUMNS);
  return Number.isInteger(given) && given > 0 ? given : PIPE_COLUMNS;
}

/** `text` cut to at most `width` characters (code points), its last one "…" when anything was cut. */
export function cutTo(text: string, width: number): string {
  const chars = Array.from(text);
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}
