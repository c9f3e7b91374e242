/** The limiter port lives with the other ports; re-exported for code that imports it from here. */
export type * from '../../stores/limiter-port.js';
