const COUNT = new Intl.NumberFormat('en-US');

/** A count as the console writes it: with thousands separators (110,010, not 110010). */
export function formatCount(n: number): string {
  return COUNT.format(n);
}
