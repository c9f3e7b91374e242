import type { DeliveryReads } from './port-destinations.js';
import { postgresDeliveryReads } from './postgres/destinations.js';
import { sqliteDeliveryReads } from './sqlite/destinations.js';

/** Where the delivery process finds the store: the server's settings, as plain data. */
export interface DeliveryReadsSettings {
  dataDir: string;
  databaseUrl: string | null;
}

/** Delivery's reads, opened in the calling process: the engine the settings name (as openStore chooses). */
export function openDeliveryReads(cfg: DeliveryReadsSettings, onError: (e: Error) => void): DeliveryReads {
  return cfg.databaseUrl === null ? sqliteDeliveryReads(cfg.dataDir) : postgresDeliveryReads(cfg.databaseUrl, onError);
}
