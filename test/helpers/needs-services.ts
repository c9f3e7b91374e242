/**
 * Suites that need PostgreSQL or Redis: skipped, and named in the run's last
 * line, when the service does not answer outside CI (services.ts).
 */
import { describe, inject } from 'vitest';
import { NEEDS_MARK, type Service } from './services.js';

/** Whether every service named can be used in this run (always true under CI). */
export function available(...services: Service[]): boolean {
  const missing = inject('missingServices') ?? [];
  return services.every((s) => !missing.some((m) => m.service === s));
}

/** A describe() that runs when the services answer, and is skipped (and reported) when one does not. */
export function describeWith(services: Service[], name: string, fn: () => void): void {
  if (available(...services)) describe(name, fn);
  else describe.skip(`${name} ${NEEDS_MARK}${services.join(', ')}]`, fn);
}

