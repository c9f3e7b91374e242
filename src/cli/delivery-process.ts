/**
 * The delivery process: reads destinations' batches, builds and sends them
 * (domain/delivery/courier.ts), on store connections of its own, so their
 * cost, which grows with the events, is not paid by the server's threads.
 * The server's DeliveryService keeps the rules on its own thread and asks
 * this process through a RemoteCourier, over the IPC channel of a fork.
 *
 * A process rather than a worker thread: every thread of it, V8's helpers
 * that collect its garbage included, runs in the idle class, so delivery
 * takes only CPU time that ingestion leaves (thread-priority.ts); as a
 * thread, its garbage was collected by the server's helpers at normal
 * priority, 2 to 5 µs of CPU an event delivered (bench/README.md).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CourierParent, CourierPort } from '../domain/delivery/courier-remote.js';
import type { DeliveryReadsSettings } from '../stores/open-delivery-reads.js';
import type { DestinationReach } from '../stores/port-destinations.js';
import { threadEntry } from '../thread-entry.js';
import { exitOnFatalErrors } from './fatal-errors.js';
import { lowestPriorityProcess } from '../thread-priority.js';

/** What the process is started with: where the store is, and what destinations may reach (plain data). */
export interface DeliveryProcessData extends DeliveryReadsSettings {
  reach: Omit<DestinationReach, 'resolve'>;
}

/** The first message a delivery process gets: its settings (the database URL travels here, never in argv or the environment). */
interface Start {
  start: DeliveryProcessData;
}

/** This file, compiled: the process's entry point. */
export const DELIVERY_PROCESS_URL = threadEntry('cli/delivery-process.js');

/** How long a delivery process told to end may take before it is killed. */
const TERMINATE_MS = 5_000;

/** The server's environment without Inlet's settings (the database URL among them): the process is given what it needs over its channel. */
function withoutSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('INLET_')));
}

/** Node's flags a delivery process takes from the server's: a CPU profile asked of the server is asked of it too. */
const passedOn = (flag: string): boolean => flag.startsWith('--cpu-prof');

/**
 * Starts a delivery process and gives it `data`: the port a RemoteCourier
 * asks. It ends when the server's end of the channel closes (the server
 * stopped, or was killed), so none outlives its server.
 */
export function startDeliveryProcess(data: DeliveryProcessData): CourierPort & { pid: number | undefined } {
  const child: ChildProcess = fork(fileURLToPath(DELIVERY_PROCESS_URL), [], {
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: process.execArgv.filter(passedOn),
    env: withoutSettings(process.env),
  });
  const send = (m: unknown) => {
    // A process that ended already: its requests fail through the exit it reports.
    if (child.connected) child.send(m as Start, () => undefined);
  };
  send({ start: data } satisfies Start);
  return {
    pid: child.pid,
    postMessage: send,
    on(event: 'message' | 'error' | 'exit', listener: (value: unknown) => void) {
      if (event === 'exit') child.on('exit', (code, signal) => listener(code ?? signal));
      else child.on(event, listener);
      return child;
    },
    // Its end of the channel closed, it exits at once, as a worker thread terminated would (and writes a
    // CPU profile when asked for one); killed if it has not within a few seconds.
    terminate: () =>
      new Promise<number>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode ?? 1);
        const kill = setTimeout(() => child.kill('SIGKILL'), TERMINATE_MS);
        child.once('exit', (code) => {
          clearTimeout(kill);
          resolve(code ?? 1);
        });
        if (child.connected) child.disconnect();
        else child.kill('SIGKILL');
      }),
  };
}

/**
 * What the process runs, loaded once it is in the idle class: loading it
 * (the store drivers, the AWS SDK) takes about half a second of CPU, which
 * at the server's priority would be taken from ingestion at every start.
 */
async function deliveryModules() {
  const [remote, courier, registry, reads] = await Promise.all([
    import('../domain/delivery/courier-remote.js'),
    import('../domain/delivery/courier.js'),
    import('../destinations/registry.js'),
    import('../stores/open-delivery-reads.js'),
  ]);
  return { serveCourier: remote.serveCourier, LocalCourier: courier.LocalCourier, senderFor: registry.senderFor, openDeliveryReads: reads.openDeliveryReads };
}

/** The process's side: once started, serves the courier over the channel; its work goes with it. */
function serveDelivery(): void {
  process.title = 'inlet-delivery';
  exitOnFatalErrors('delivery');
  // When the cores are all busy, the server's threads go first, and delivery uses what they leave.
  lowestPriorityProcess();
  const modules = deliveryModules();
  // The server's end closed: nothing will be asked again, and a send in flight is sent again by whoever delivers next.
  process.on('disconnect', () => process.exit(0));
  // A signal to the server's process group (systemd's stop, Ctrl-C) is the server's to act on: it drains
  // its batches, with delivery still running, then closes the channel, which ends this process.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);
  // Listened for at once, while the modules load: a message that finds no listener is lost. The first
  // is the start; those after it wait for the courier.
  let courier: ((message: unknown) => void) | null = null;
  const waiting: unknown[] = [];
  const channel: CourierParent = {
    postMessage: (m) => process.send?.(m),
    on: (_event, listener) => {
      courier = listener;
      for (const m of waiting.splice(0)) listener(m);
    },
  };
  let started = false;
  process.on('message', (m) => {
    if (courier !== null) return courier(m);
    if (started) return void waiting.push(m);
    started = true;
    void modules.then(({ serveCourier, LocalCourier, senderFor, openDeliveryReads }) => {
      const data = (m as Start).start;
      // A PostgreSQL connection that drops is replaced at the next read; the read that found it gone fails and is tried again.
      serveCourier(channel, new LocalCourier(openDeliveryReads(data, () => undefined), (d) => senderFor(d, data.reach)));
    });
  });
}

if (process.send !== undefined && process.argv[1] === fileURLToPath(DELIVERY_PROCESS_URL)) serveDelivery();
