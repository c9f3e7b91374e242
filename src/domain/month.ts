/** The metering month of an instant: "YYYY-MM" in UTC. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}
