import type { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { openLimiter } from '../../domain/limits/open-limiter.js';
import { RateLimits } from '../../domain/limits/policies.js';
import { startRetention } from '../../domain/retention.js';
import { Admission } from '../../edge/admission.js';
import { buildApp } from '../../edge/app.js';
import { openStore } from '../../stores/open-store.js';
import { fail } from '../context.js';

/** How long requests in flight get to finish after SIGTERM before their connections are cut. */
const SHUTDOWN_DEADLINE_MS = 25_000;

/** `inlet serve`: the batch API until SIGTERM or SIGINT. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve the batch API')
    .option('--port <n>', 'port (env INLET_PORT, default 8080; 0 picks a free one)')
    .option('--host <addr>', 'address to listen on (env INLET_HOST, default 127.0.0.1)')
    .option('--data-dir <dir>', 'data directory of the embedded store (env INLET_DATA_DIR, default ./data)')
    .option('--base-url <url>', 'public URL, for links in errors (env INLET_BASE_URL)')
    .action(async (o) => {
      try {
        await serve(o);
      } catch (e) {
        fail(e);
      }
    });
}

async function serve(flags: { port?: string; host?: string; dataDir?: string; baseUrl?: string }): Promise<void> {
  const cfg = loadConfig(process.env, flags);
  const store = await openStore(cfg);
  const logger = { level: cfg.logLevel, stream: process.stderr };
  // The limiter exists before the app (the app needs it), so its warnings reach
  // the app's log through this late-bound function.
  let warn = (msg: string): void => void process.stderr.write(`${msg}\n`);
  const limiter = openLimiter(cfg.redisUrl, {
    onError: (err) => warn(`Redis unavailable for rate limits; each server counts alone until it answers again: ${err.message}`),
  });
  const app = buildApp({
    store,
    limits: new RateLimits(limiter, cfg.limits),
    clock: Date.now,
    baseUrl: cfg.baseUrl ?? `http://localhost:${cfg.port}`,
    trackerHosts: cfg.trackerHosts,
    retiredVersions: cfg.retiredVersions,
    logger,
    admission: new Admission(cfg.admission.budgetBytes, cfg.admission.waitMs),
  });
  warn = (msg) => app.log.warn(msg);
  await app.listen({ port: cfg.port, host: cfg.host });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : cfg.port;
  // With --port 0 the port is known only now: links in errors and docs must name it.
  if (cfg.baseUrl === null) app.inletBaseUrl = `http://localhost:${port}`;
  const host = cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host;
  process.stdout.write(`inlet listening on http://${host}:${port}\n`);
  const retention = startRetention(store, Date.now, {
    done: (r) => (r.deleted > 0 || r.dropped > 0 ? app.log.info(r, 'retention: expired events deleted') : undefined),
    failed: (err) => app.log.warn({ err }, 'retention pass failed; the next one tries again'),
  });

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping: finishing requests in flight');
    // close() stops accepting and waits for requests in flight, their commits
    // included. Keep-alive connections that were busy when it began turn idle
    // only afterwards, and Node would wait out their 72 s timeout: sweep them
    // as they go idle, and cut whatever is left after a deadline.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    const deadline = setTimeout(() => app.server.closeAllConnections(), SHUTDOWN_DEADLINE_MS);
    await app.close();
    clearInterval(sweep);
    clearTimeout(deadline);
    await retention.stop();
    await store.close();
    await limiter.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
