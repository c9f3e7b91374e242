import type { IngestItem } from './item.js';

/**
 * The JSON text stored as an event's properties: the item's properties, then
 * what enrichment added. The checks' own text of the properties is reused (they
 * measure it), so a track item is serialised once.
 */
export function storedProperties(item: Pick<IngestItem<'track'>, 'properties' | 'propertiesJson' | 'enrichment'>): string {
  const { properties, enrichment } = item;
  let enriched = false;
  for (const key in enrichment) {
    // A key in both keeps its place with the enrichment's value, and an array-index key sorts
    // first: only a whole rewrite spells either. Enrichment keys start with "$", so neither happens.
    if (Object.hasOwn(properties, key) || key.charCodeAt(0) !== 36) return JSON.stringify({ ...properties, ...enrichment });
    enriched = true;
  }
  const own = item.propertiesJson;
  if (!enriched) return own;
  const added = JSON.stringify(enrichment);
  return own === '{}' ? added : `${own.slice(0, -1)},${added.slice(1)}`;
}
