/** Where the reference pages are served (docs-routes.ts serves them; the console links to them). */
export const DOCS_PATH = '/docs/api';
export const OPENAPI_PATH = `${DOCS_PATH}/openapi.json`;
/** The reference page's filter script, served beside it. */
export const REFERENCE_SCRIPT_PATH = `${DOCS_PATH}/reference.js`;
