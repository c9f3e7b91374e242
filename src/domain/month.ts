/** The metering month of an instant: "YYYY-MM" in UTC. */
export function monthOf(ms: number): string {
  // Every request asks, nearly always about the month of the last one.
  if (ms >= last.from && ms < last.to) return last.month;
  const d = new Date(ms);
  last = { from: monthStart(d, 0), to: monthStart(d, 1), month: d.toISOString().slice(0, 7) };
  return last.month;
}

let last = { from: 0, to: 0, month: '' };

/** The first instant of the month `offset` months after that of `d` (Date.UTC would read years below 100 as 19xx). */
function monthStart(d: Date, offset: number): number {
  const start = new Date(0);
  start.setUTCFullYear(d.getUTCFullYear(), d.getUTCMonth() + offset, 1);
  return start.getTime();
}
