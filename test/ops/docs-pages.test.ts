/** Keeps docs/settings.md, docs/metrics.md and `inlet serve --help` in step with the code. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import { SETTINGS_PAGE, settingsTable, tableInPage } from '../../src/settings-doc.js';
import { SETTINGS } from '../../src/settings.js';
import { runCli } from '../helpers/process.js';

describe('settings', () => {
  it('docs/settings.md holds the table generated from src/settings.ts (npm run docs:settings rewrites it)', () => {
    expect(tableInPage(readFileSync(SETTINGS_PAGE, 'utf8'))).toBe(settingsTable());
  });

  it('inlet serve --help lists every setting with its variable and default', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    const help = r.stdout.replace(/\s+/g, ' ');
    for (const s of Object.values(SETTINGS)) {
      expect(help).toContain(s.env);
      expect(help).toContain(`default ${s.shown}`.replace(/\s+/g, ' '));
      if (s.flag !== undefined) expect(help).toContain(s.flag);
    }
  });

  it('inlet --version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${version}\n`);
  });
});

describe('metrics', () => {
  const page = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');

  it("docs/metrics.md lists every one of Inlet's metrics with its type and labels, and no other", async () => {
    const documented = new Map<string, { type: string; labels: string[] }>();
    for (const m of page.matchAll(/^\| `(inlet_[a-z_]+)` \| (\w+) \|([^|]*)\|/gm)) {
      documented.set(m[1]!, { type: m[2]!, labels: [...m[3]!.matchAll(/`(\w+)`/g)].map((l) => l[1]!).sort() });
    }
    const metrics = new Metrics({ processDefaults: false });
    const registered = new Map<string, { type: string; labels: string[] }>();
    for (const metric of await metrics.registry.getMetricsAsJSON()) {
      const labels = new Set<string>();
      for (const v of metric.values) for (const l of Object.keys(v.labels)) if (l !== 'le') labels.add(l);
      // A labelled metric with no series yet shows no label: read them from the metric itself.
      for (const l of (metrics.registry.getSingleMetric(metric.name) as unknown as { labelNames: string[] }).labelNames) labels.add(l);
      registered.set(metric.name, { type: String(metric.type), labels: [...labels].sort() });
    }
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(registered));
  });

  it('every process or Node.js metric the page names is exported, and names follow the conventions', async () => {
    const names = new Set((await new Metrics().registry.getMetricsAsJSON()).map((m) => m.name));
    const named = [...page.matchAll(/`((?:process|nodejs)_[a-z_]+)`/g)].map((m) => m[1]!).filter((n) => !n.endsWith('_'));
    expect(named.length).toBeGreaterThan(3);
    for (const n of named) expect(names, n).toContain(n);
    for (const metric of await new Metrics({ processDefaults: false }).registry.getMetricsAsJSON()) {
      expect(metric.name).toMatch(/^inlet_[a-z_]+$/);
      if (String(metric.type) === 'counter') expect(metric.name).toMatch(/_total$/);
    }
  });
});
