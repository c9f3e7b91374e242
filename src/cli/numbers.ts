const COUNT = new Intl.NumberFormat('en-US');

/** A count as the human lines write it: 24,305,664 rather than 24305664 (--json keeps plain numbers). */
export function formatCount(n: number): string {
  return COUNT.format(n);
}
