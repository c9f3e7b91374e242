/**
 * 30 s for a request to arrive in full (line, headers and body). A body that
 * trickles holds its reading reservation at most this long; a batch of 1 MiB
 * takes under a second on any link a server sends from.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Default for INLET_MAX_CONNECTIONS. An open connection costs tens of KiB
 * besides any body it sends (socket, parser, buffers), so 4,096 of them stay
 * well under 300 MiB; a server behind a proxy that pools connections needs a
 * few dozen.
 */
export const MAX_CONNECTIONS = 4096;
