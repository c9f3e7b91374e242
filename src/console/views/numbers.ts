const COUNT = new Intl.NumberFormat('en-US');

/** A count with thousands separators, as the console shows every number: "20,000". */
export function formatCount(n: number): string {
  return COUNT.format(n);
}
