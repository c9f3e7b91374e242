/**
 * What a long-running process (`inlet serve`, the delivery process) does
 * with an error nothing caught: one log line at `fatal`, then an exit with
 * code 1. Node's own handler prints the error's message and stack as they
 * are; a JavaScript error's message quotes the value it choked on (a
 * JSON.parse SyntaxError shows the text it read), and stderr is where the
 * logs go, which never hold a body, a property or a trait. The line is in
 * the request log's format, with the error as every logged error is
 * (errorForLog), and is written before the exit returns. Past such an error
 * the process's state is unknown: it ends, for its supervisor (systemd,
 * Docker, the server for its delivery process) to start it again.
 */
import { pino } from 'pino';
import { type LoggedError, errorForLog } from '../edge/log-error.js';

/** Which process the line comes from: both write to the same stderr. */
export type FatalProcess = 'server' | 'delivery';

/** The parts of `process` the handler uses: a seam for tests. */
export interface FatalHost {
  on(event: 'uncaughtException', listener: (e: unknown, origin: string) => void): unknown;
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
  exit(code: number): never;
}

const MESSAGES = {
  uncaughtException: 'an error was thrown and nothing caught it; the process ends',
  unhandledRejection: 'a promise failed and nothing handled it; the process ends',
} as const;

/** errorForLog, or the least that can be said when even that fails (a thrown object whose fields throw). */
function safeError(e: unknown): LoggedError {
  try {
    return errorForLog(e);
  } catch {
    return { type: 'unknown' };
  }
}

/**
 * From here on, an uncaught exception or an unhandled rejection is logged
 * at `fatal` and ends the process. Rejections are listened for themselves:
 * Node would otherwise raise them wrapped in an error of its own whose
 * message quotes the reason (a string rejected is written out whole).
 * `destination`: where the line goes, stderr (fd 2) unless given.
 */
export function exitOnFatalErrors(processName: FatalProcess, host: FatalHost = process, destination: pino.DestinationStream = pino.destination({ dest: 2, sync: true })): void {
  const log = pino({ serializers: { err: safeError } }, destination);
  const fatal = (e: unknown, origin: keyof typeof MESSAGES): void => {
    try {
      log.fatal({ err: e, origin, process: processName }, MESSAGES[origin]);
    } finally {
      host.exit(1);
    }
  };
  host.on('uncaughtException', (e, origin) => fatal(e, origin === 'unhandledRejection' ? 'unhandledRejection' : 'uncaughtException'));
  host.on('unhandledRejection', (reason) => fatal(reason, 'unhandledRejection'));
}
