import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts', 'sdk/*/src/**/*.test.ts'],
    // better-sqlite3 is a native addon: separate processes are safer than threads.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Outside CI, suites whose PostgreSQL or Redis is not running are skipped and named in one line at the end.
    globalSetup: ['test/helpers/services-setup.ts'],
    reporters: ['default', './test/helpers/skipped-reporter.ts'],
  },
});
