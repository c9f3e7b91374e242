import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { startLiveServer } from '../helpers/live-server.js';

const run = promisify(execFile);
const SDK = fileURLToPath(new URL('../../sdk/node/', import.meta.url));

describe('the SDK away from the Inlet checkout', () => {
  it('npm pack of sdk/node makes a licensed tarball that installs into another project with no network, and imports', async () => {
    const out = tempDir('inlet-pack-');
    const app = tempDir('inlet-app-');
    try {
      // A cache of its own: nothing may come from one the machine already has.
      const npm = (args: string[], cwd: string) => run('npm', [...args, '--cache', join(out.dir, 'cache'), '--no-audit', '--no-fund'], { cwd });
      const { stdout } = await npm(['pack', '--json', '--pack-destination', out.dir], SDK);
      const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
      expect(packed!.files.map((f) => f.path)).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts']));

      writeFileSync(join(app.dir, 'package.json'), JSON.stringify({ name: 'some-app', version: '1.0.0', type: 'module', private: true }));
      await npm(['install', join(out.dir, packed!.filename), '--offline'], app.dir);
      const installed = JSON.parse(readFileSync(join(app.dir, 'node_modules/@inlet/node/package.json'), 'utf8'));
      expect(installed.license).toBe('Apache-2.0');
      expect(readFileSync(join(app.dir, 'node_modules/@inlet/node/LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0/);

      const probe = `import { Inlet, QueueFullError } from '@inlet/node';
const inlet = new Inlet({ key: 'srv_live_x', baseUrl: 'http://127.0.0.1:1' });
process.stdout.write(JSON.stringify({ inlet: typeof inlet.track, drain: typeof inlet.drain, error: QueueFullError.name }));`;
      writeFileSync(join(app.dir, 'probe.mjs'), probe);
      const r = await run(process.execPath, ['probe.mjs'], { cwd: app.dir });
      expect(JSON.parse(r.stdout)).toEqual({ inlet: 'function', drain: 'function', error: 'QueueFullError' });
      // Where the SDK's README makes it, the tarball is no untracked file.
      await run('git', ['check-ignore', '--quiet', join(SDK, packed!.filename)], { cwd: SDK });
    } finally {
      out.remove();
      app.remove();
    }
  });

  it('the README snippets run in a default npm project ("type": "commonjs"): the module one saved as .mjs, the CommonJS one as .js', async () => {
    const out = tempDir('inlet-pack-');
    const app = tempDir('inlet-app-');
    const live = await startLiveServer();
    try {
      const npm = (args: string[], cwd: string) => run('npm', [...args, '--cache', join(out.dir, 'cache'), '--no-audit', '--no-fund'], { cwd });
      const { stdout } = await npm(['pack', '--json', '--pack-destination', out.dir], SDK);
      const [packed] = JSON.parse(stdout) as { filename: string }[];
      await npm(['init', '-y'], app.dir);
      expect(JSON.parse(readFileSync(join(app.dir, 'package.json'), 'utf8')).type ?? 'commonjs').toBe('commonjs');
      await npm(['install', join(out.dir, packed!.filename), '--offline'], app.dir);

      const blocks = (file: string) => [...readFileSync(file, 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!.replaceAll('http://localhost:8080', live.url));
      const moduleSnippet = blocks(fileURLToPath(new URL('../../README.md', import.meta.url))).find((b) => b.startsWith("import { Inlet } from '@inlet/node'"));
      const commonSnippet = blocks(join(SDK, 'README.md')).find((b) => b.startsWith("const { Inlet } = require('@inlet/node')"));
      writeFileSync(join(app.dir, 'app.mjs'), moduleSnippet!);
      writeFileSync(join(app.dir, 'app.js'), commonSnippet!);
      const env = { ...process.env, INLET_KEY: live.key };
      const esm = await run(process.execPath, ['app.mjs'], { cwd: app.dir, env });
      expect(esm.stdout).toMatch(/^2 \[\] \[\]/);
      const cjs = await run(process.execPath, ['app.js'], { cwd: app.dir, env });
      expect(cjs.stdout).toMatch(/accepted: 1\b/);
      expect(cjs.stderr).toBe('');
    } finally {
      await live.stop();
      out.remove();
      app.remove();
    }
  });
});
