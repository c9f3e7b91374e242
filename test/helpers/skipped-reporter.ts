/**
 * Ends a run that skipped suites for a missing service with one line: which
 * suites, which service at which address, and how to start it.
 */
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { MISSING_ENV } from './services-setup.js';
import { type MissingService, NEEDS_MARK, SERVICES } from './services.js';

/** The suites skipped for a missing service: their names without the mark, and their files. */
export function skippedForServices(modules: ReadonlyArray<TestModule>): string[] {
  const names: string[] = [];
  for (const m of modules) {
    for (const suite of m.children.allSuites()) {
      const at = suite.name.lastIndexOf(` ${NEEDS_MARK}`);
      if (at >= 0 && suite.state() === 'skipped') names.push(`"${suite.name.slice(0, at)}" (${relative(process.cwd(), m.moduleId)})`);
    }
  }
  return names;
}

/** The one line: what was skipped, why, and what to do. */
export function skipLine(skipped: string[], missing: MissingService[]): string {
  const why = missing
    .map((m) => `${SERVICES[m.service].title} does not answer at ${m.url} (${m.problem}); start it (${SERVICES[m.service].start}) or point ${SERVICES[m.service].setting} at one`)
    .join('; ');
  return `Skipped ${skipped.length} suite(s) that need a service not running here: ${skipped.join(', ')}. ${why}. With CI=true they fail instead.`;
}

export default class SkippedReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const missing = JSON.parse(process.env[MISSING_ENV] ?? '[]') as MissingService[];
    const skipped = skippedForServices(modules);
    if (missing.length > 0 && skipped.length > 0) process.stdout.write(`\n${skipLine(skipped, missing)}\n`);
  }
}
