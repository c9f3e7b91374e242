/**
 * 30 s for a request to arrive in full (line, headers and body). A body that
 * trickles holds its reading reservation at most this long; a batch of 1 MiB
 * takes under a second on any link a server sends from.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Default for INLET_MAX_CONNECTIONS. Besides the body it sends (bounded by the
 * reading budget), an open connection costs about 8 KiB (3,000 with half their
 * headers sent took 23 MiB), and its headers at most 16 KiB more, so 4,096 of
 * them stay near 100 MiB. A server behind a proxy that pools connections
 * needs a few dozen.
 */
export const MAX_CONNECTIONS = 4096;

/**
 * Default for INLET_LIVE_STREAMS: the console's live views one server keeps
 * open at once. They come on top of INLET_MAX_CONNECTIONS, so the API keeps
 * its room whatever the console does; each may hold LIVE_BUFFER_BYTES unsent,
 * so 64 of them hold 64 MiB at most.
 */
export const LIVE_STREAMS = 64;

/**
 * Default for INLET_LIVE_STREAMS_PER_SESSION. A browser opens at most 6
 * connections to one server over HTTP/1.1, so a session needs no more live
 * views than that, one per tab.
 */
export const LIVE_STREAMS_PER_SESSION = 6;

/**
 * The live views one user may have open on a server, all their sessions
 * together: two sessions' worth (two browsers). A session costs only a
 * sign-in, so without it one user signing in 11 times took all 64. Never
 * under the per-session cap, when that is set higher.
 */
export const LIVE_STREAMS_PER_USER = 12;

/**
 * Bytes a live view may have waiting to be sent. A 500-item request is about
 * 150 KB of lines, so a reader gets several behind before it is dropped; a
 * browser reconnects by itself a second later and carries on from then.
 */
export const LIVE_BUFFER_BYTES = 1_048_576;

/**
 * A live view whose socket has made no progress this long is ended: writes
 * wait on a client that reads nothing. Above two heartbeats (15 s each), so
 * a quiet source never ends a healthy view.
 */
export const LIVE_STALL_MS = 40_000;
