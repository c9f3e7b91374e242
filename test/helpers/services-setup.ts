/**
 * Vitest global setup: probes PostgreSQL and Redis once per run. Outside CI,
 * the ones that do not answer are handed to the test files (inject), which
 * skip what needs them; under CI nothing is handed over, so those tests fail.
 */
import type { TestProject } from 'vitest/node';
import { type MissingService, TEST_DATABASE_URL, TEST_REDIS_URL, postgresProblem, redisProblem } from './services.js';

/** Where the reporter, in this same process, reads what is missing. */
export const MISSING_ENV = 'INLET_TEST_MISSING_SERVICES';

export default async function setup(project: TestProject): Promise<void> {
  const missing: MissingService[] = [];
  if (!process.env.CI) {
    const [pgProblem, redis] = await Promise.all([postgresProblem(TEST_DATABASE_URL), redisProblem(TEST_REDIS_URL)]);
    if (pgProblem !== null) missing.push({ service: 'postgres', url: TEST_DATABASE_URL, problem: pgProblem });
    if (redis !== null) missing.push({ service: 'redis', url: TEST_REDIS_URL, problem: redis });
  }
  process.env[MISSING_ENV] = JSON.stringify(missing);
  project.provide('missingServices', missing);
}
