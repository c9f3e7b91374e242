/**
 * Keeps the error table, the reference page and the OpenAPI document in step
 * (docs/design.md, "One table of codes"): a code added, renamed or moved to another status in
 * src/errors/codes.ts must show up in both documents, and nothing else may.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope } from '../src/edge/envelope.js';
import { DROP_REASONS, ITEM_ERRORS, REQUEST_ERRORS, type RequestErrorCode } from '../src/errors/codes.js';
import { type Fixture, makeFixture } from './helpers/fixture.js';

const BASE_URL = 'http://inlet.test';
const DOCS_URL_PREFIX = `${BASE_URL}/docs/api#`;

const TABLES = {
  request: Object.keys(REQUEST_ERRORS),
  item: Object.keys(ITEM_ERRORS),
  drop: Object.keys(DROP_REASONS),
} as const;
const ALL_CODES = [...TABLES.request, ...TABLES.item, ...TABLES.drop];

/** The table's own grouping of request codes by status, for comparison with the document. */
function tableCodesByStatus(): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const [code, spec] of Object.entries(REQUEST_ERRORS)) m.set(String(spec.status), [...(m.get(String(spec.status)) ?? []), code]);
  return m;
}

interface Tag {
  name: string;
  attrs: Map<string, string>;
}

const decode = (s: string): string =>
  s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

// The page is generated with every attribute value double-quoted and escaped,
// and no raw "<" in text, so a regular expression reads its start tags reliably.
function startTags(html: string): Tag[] {
  const tags: Tag[] = [];
  for (const m of html.matchAll(/<([a-zA-Z][a-zA-Z0-9]*)((?:\s[^>]*)?)>/g)) {
    const attrs = new Map<string, string>();
    for (const a of m[2]!.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*"([^"]*)")?/g)) attrs.set(a[1]!.toLowerCase(), decode(a[2] ?? ''));
    tags.push({ name: m[1]!.toLowerCase(), attrs });
  }
  return tags;
}

function accessControlHeaders(headers: Record<string, unknown>): string[] {
  return Object.keys(headers).filter((h) => h.toLowerCase().startsWith('access-control-'));
}

type Json = Record<string, any>;

let f: Fixture;
let page: { status: number; headers: Record<string, unknown>; body: string };
let openapiRes: { status: number; headers: Record<string, unknown>; body: string };
let tags: Tag[];
let doc: Json;

beforeAll(async () => {
  f = await makeFixture();
  const p = await f.app.inject({ method: 'GET', url: '/docs/api' });
  page = { status: p.statusCode, headers: p.headers, body: p.body };
  const o = await f.app.inject({ method: 'GET', url: '/docs/api/openapi.json' });
  openapiRes = { status: o.statusCode, headers: o.headers, body: o.body };
  tags = startTags(page.body);
  doc = JSON.parse(openapiRes.body) as Json;
});

afterAll(async () => {
  await f?.close();
});

describe('the tables', () => {
  it('use every code once across request errors, item errors and drop reasons, since one anchor serves one code', () => {
    expect(new Set(ALL_CODES).size).toBe(ALL_CODES.length);
  });
});

describe('GET /docs/api', () => {
  it('answers 200 with HTML, a Request-Id and no Access-Control-* header', () => {
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['request-id']).toMatch(/^req_/);
    expect(accessControlHeaders(page.headers)).toEqual([]);
  });

  it('has exactly one element with id=code for every code of the tables, marked with its table', () => {
    for (const [table, codes] of Object.entries(TABLES)) {
      for (const code of codes) {
        const withId = tags.filter((t) => t.attrs.get('id') === code);
        expect(withId, `elements with id="${code}"`).toHaveLength(1);
        expect(withId[0]!.attrs.get('data-code-table'), `table of #${code}`).toBe(table);
      }
    }
  });

  it('has no code anchor that the tables do not hold', () => {
    const anchors = tags.filter((t) => t.attrs.has('data-code-table')).map((t) => t.attrs.get('id'));
    expect([...anchors].sort()).toEqual([...ALL_CODES].sort());
    // Codes are snake_case and section ids are not, so an unmarked id with "_" is a stray code anchor.
    const stray = tags.map((t) => t.attrs.get('id')).filter((id) => id !== undefined && id.includes('_') && !ALL_CODES.includes(id));
    expect(stray).toEqual([]);
  });

  it('states each request code with the status and retryability of the table', () => {
    for (const [code, spec] of Object.entries(REQUEST_ERRORS)) {
      const start = page.body.indexOf(`id="${code}"`);
      const section = page.body.slice(start, page.body.indexOf('</section>', start));
      expect(section, code).toContain(`<dt>Status</dt><dd>${spec.status} `);
      expect(section, code).toContain(`<dt>Retryable</dt><dd>${spec.retryable ? 'Yes' : 'No'}</dd>`);
    }
  });

  it('has unique ids, and every link to "#…" lands on one of them', () => {
    const ids = tags.map((t) => t.attrs.get('id')).filter((id): id is string => id !== undefined);
    expect(new Set(ids).size).toBe(ids.length);
    const targets = tags.map((t) => t.attrs.get('href')).filter((h): h is string => h?.startsWith('#') ?? false);
    expect(targets.length).toBeGreaterThan(0);
    for (const h of targets) expect(ids, h).toContain(h.slice(1));
  });

  it('is self-contained: no script but its own file from this server, no outside assets, no links to other hosts', () => {
    expect(tags.filter((t) => t.name === 'link' || t.name === 'iframe' || t.name === 'img')).toEqual([]);
    expect(tags.filter((t) => t.attrs.has('src')).map((t) => [t.name, t.attrs.get('src')])).toEqual([['script', '/docs/api/reference.js']]);
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self';/);
    expect(page.headers['content-security-policy']).not.toMatch(/script-src[^;]*unsafe/);
    expect(tags.filter((t) => [...t.attrs.keys()].some((a) => a.startsWith('on')))).toEqual([]);
    const hrefs = tags.map((t) => t.attrs.get('href')).filter((h): h is string => h !== undefined);
    expect(hrefs.filter((h) => !h.startsWith('#') && !h.startsWith('/docs/api'))).toEqual([]);
  });
});

describe('finding a code on the reference page', () => {
  it('fault: the contents did not list the ~60 codes; an index near the top links every code to its section', () => {
    const index = page.body.slice(page.body.indexOf('<nav aria-labelledby="code-index-h" id="code-index">'), page.body.indexOf('</nav>', page.body.indexOf('id="code-index"')));
    const linked = [...index.matchAll(/<a href="#([a-z0-9_]+)"><code>\1<\/code><\/a>/g)].map((m) => m[1]!);
    expect([...linked].sort()).toEqual([...ALL_CODES].sort());
    // Near the top: in the header, before the body's first section.
    expect(page.body.indexOf('id="code-index"')).toBeLessThan(page.body.indexOf('<main>'));
  });

  it('fault: the page had no search; a filter box is served with its script from this server', async () => {
    expect(page.body).toMatch(/<form class="filter" role="search" hidden>\s*<label for="filter">Filter the page<\/label>\s*<input id="filter" type="search"/);
    const script = await f.app.inject({ method: 'GET', url: '/docs/api/reference.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.body).toContain("getElementById('filter')");
  });
});

describe('GET /docs/api/openapi.json', () => {
  it('answers 200 with an OpenAPI 3.1 document, a Request-Id and no Access-Control-* header', () => {
    expect(openapiRes.status).toBe(200);
    expect(openapiRes.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(openapiRes.headers['request-id']).toMatch(/^req_/);
    expect(accessControlHeaders(openapiRes.headers)).toEqual([]);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: BASE_URL }]);
    expect(doc.components.securitySchemes.serverKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('enumerates exactly the codes of the tables', () => {
    const s = doc.components.schemas;
    const responses = Object.values(doc.paths['/api/v1/batch'].post.responses as Json);
    const envelopeCodes = responses.flatMap((r) => r.content['application/json'].schema.properties?.error?.properties.code.enum ?? []);
    expect([...envelopeCodes].sort()).toEqual([...TABLES.request].sort());
    expect([...s.ItemError.properties.code.enum].sort()).toEqual([...TABLES.item].sort());
    expect([...s.DroppedItem.properties.reason.enum].sort()).toEqual([...TABLES.drop].sort());
    const dryRunReasons = s.DryRunItem.properties.reason.anyOf[0].enum as string[];
    expect([...dryRunReasons].sort()).toEqual([...TABLES.drop].sort());
  });

  it('has one response per status of the table, listing exactly the codes of that status', () => {
    const responses = doc.paths['/api/v1/batch'].post.responses as Json;
    const byStatus = tableCodesByStatus();
    expect(Object.keys(responses).sort()).toEqual(['200', '202', ...byStatus.keys()].sort());
    for (const [status, codes] of byStatus) {
      const r = responses[status];
      expect([...r['x-error-codes']].sort(), `x-error-codes of ${status}`).toEqual([...codes].sort());
      const narrowed = r.content['application/json'].schema.properties.error.properties.code.enum as string[];
      expect([...narrowed].sort(), `error.code enum of ${status}`).toEqual([...codes].sort());
      for (const code of codes) expect(r.description, `description of ${status}`).toContain(`\`${code}\``);
      for (const other of TABLES.request.filter((c) => !codes.includes(c))) {
        expect(r.description, `description of ${status}`).not.toContain(`\`${other}\``);
      }
    }
  });

  it('documents Request-Id everywhere, Retry-After on 429/503, RateLimit on 202/429 and Allow on 405', () => {
    const responses = doc.paths['/api/v1/batch'].post.responses as Json;
    const has = (status: string, header: string): boolean => header in (responses[status].headers ?? {});
    for (const status of Object.keys(responses)) expect(has(status, 'Request-Id'), status).toBe(true);
    for (const status of ['429', '503']) expect(has(status, 'Retry-After'), status).toBe(true);
    for (const status of ['202', '429']) {
      expect(has(status, 'RateLimit'), status).toBe(true);
      expect(has(status, 'RateLimit-Policy'), status).toBe(true);
    }
    expect(has('405', 'Allow')).toBe(true);
  });

  it('resolves every $ref inside the document', () => {
    const refs: string[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref' && typeof x === 'string') refs.push(x);
          else walk(x);
        }
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref, ref).toMatch(/^#\//);
      const target = ref.slice(2).split('/').reduce<unknown>((node, part) => (node as Json | undefined)?.[part], doc);
      expect(target, ref).toBeDefined();
    }
  });

  it('gives example envelopes whose docs_url points at an anchor of the page', () => {
    const responses = doc.paths['/api/v1/batch'].post.responses as Json;
    const anchors = new Set(tags.filter((t) => t.attrs.has('data-code-table')).map((t) => t.attrs.get('id')));
    for (const [status, codes] of tableCodesByStatus()) {
      const examples = responses[status].content['application/json'].examples as Json;
      for (const code of codes) {
        const url = examples[code].value.error.docs_url as string;
        expect(url).toBe(`${DOCS_URL_PREFIX}${code}`);
        expect(anchors.has(url.slice(DOCS_URL_PREFIX.length)), url).toBe(true);
      }
    }
  });
});

describe('docs_url of an error envelope', () => {
  const anchorIds = (): Set<string | undefined> => new Set(tags.map((t) => t.attrs.get('id')));

  it('points at an existing anchor for every request code', () => {
    for (const code of TABLES.request as RequestErrorCode[]) {
      const url = envelope(BASE_URL, 'req_test', { code }).error.docs_url;
      expect(url.startsWith(DOCS_URL_PREFIX), url).toBe(true);
      expect(anchorIds().has(url.slice(DOCS_URL_PREFIX.length)), url).toBe(true);
    }
  });

  it('points at a served page and an existing anchor in real answers', async () => {
    const answers = await Promise.all([
      f.app.inject({ method: 'POST', url: '/api/v1/batch', headers: { 'content-type': 'application/json' }, payload: '{"items":[]}' }),
      f.app.inject({ method: 'GET', url: '/api/v1/batch' }),
      f.app.inject({ method: 'POST', url: '/api/v1/nothing-here' }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([401, 405, 404]);
    for (const a of answers) {
      expect(accessControlHeaders(a.headers)).toEqual([]);
      const { code, docs_url: url } = a.json().error as { code: string; docs_url: string };
      expect(url).toBe(`${DOCS_URL_PREFIX}${code}`);
      expect(anchorIds().has(code), url).toBe(true);
      const served = await f.app.inject({ method: 'GET', url: new URL(url).pathname });
      expect(served.statusCode).toBe(200);
      expect(served.body).toContain(`id="${code}"`);
    }
  });
});
