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
