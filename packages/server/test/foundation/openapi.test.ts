import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import type { App } from '../../src/app.js';

type Json = Record<string, unknown>;

const OPERATION_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch']);
const PARAMETER_LOCATIONS = new Set(['query', 'path', 'header', 'cookie']);
const OAS30_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
// The keywords of an OpenAPI 3.0 Schema Object (a subset of JSON Schema draft 5 plus
// nullable, discriminator, …): JSON Schema keywords 3.0 does not know (`const`,
// `$id`, `if`, `prefixItems`, type arrays) make a document that tools reject.
const OAS30_SCHEMA_KEYWORDS = new Set([
  'title',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxProperties',
  'minProperties',
  'required',
  'enum',
  'type',
  'allOf',
  'oneOf',
  'anyOf',
  'not',
  'items',
  'properties',
  'additionalProperties',
  'description',
  'format',
  'default',
  'nullable',
  'discriminator',
  'readOnly',
  'writeOnly',
  'example',
  'deprecated',
  '$ref',
]);

/** Structural problems that make a document invalid OpenAPI 3.0; empty when valid. */
function openApi30Problems(doc: Json): string[] {
  const problems: string[] = [];
  const components = (doc.components ?? {}) as Json;
  const resolves = (ref: string) => {
    const match = /^#\/components\/(\w+)\/(.+)$/.exec(ref);
    return match !== null && ((components[match[1]!] ?? {}) as Json)[match[2]!] !== undefined;
  };
  const schema = (s: unknown, where: string): void => {
    if (!s || typeof s !== 'object' || Array.isArray(s)) {
      problems.push(`${where}: a schema must be an object`);
      return;
    }
    for (const keyword of Object.keys(s as Json)) {
      if (keyword.startsWith('x-')) continue;
      if (!OAS30_SCHEMA_KEYWORDS.has(keyword)) problems.push(`${where}: keyword "${keyword}"`);
    }
    const o = s as Json;
    if (o.type !== undefined && !OAS30_TYPES.has(o.type as string))
      problems.push(`${where}: type ${JSON.stringify(o.type)}`);
    if (typeof o.$ref === 'string' && !resolves(o.$ref))
      problems.push(`${where}: unresolved $ref ${o.$ref}`);
    if (o.type === 'array' && o.items === undefined) problems.push(`${where}: array without items`);
    if (o.required !== undefined && !Array.isArray(o.required))
      problems.push(`${where}: required must be a list`);
    for (const [name, sub] of Object.entries((o.properties ?? {}) as Json))
      schema(sub, `${where}.${name}`);
    for (const k of ['items', 'not'] as const)
      if (o[k] !== undefined) schema(o[k], `${where}/${k}`);
    if (typeof o.additionalProperties === 'object')
      schema(o.additionalProperties, `${where}/additionalProperties`);
    for (const k of ['allOf', 'oneOf', 'anyOf'] as const) {
      if (o[k] !== undefined)
        (o[k] as unknown[]).forEach((x, i) => schema(x, `${where}/${k}/${i}`));
    }
  };
  const content = (c: unknown, where: string) => {
    for (const [type, media] of Object.entries((c ?? {}) as Json)) {
      const m = media as Json;
      if (m.schema !== undefined) schema(m.schema, `${where} ${type}`);
    }
  };

  if (typeof doc.openapi !== 'string' || !/^3\.0\.\d+$/.test(doc.openapi))
    problems.push(`openapi: ${String(doc.openapi)}`);
  const info = doc.info as Json | undefined;
  if (typeof info?.title !== 'string' || typeof info?.version !== 'string')
    problems.push('info.title and info.version are required');
  for (const [name, s] of Object.entries((components.schemas ?? {}) as Json))
    schema(s, `components.schemas.${name}`);

  const operationIds = new Set<string>();
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Json)) {
    if (!path.startsWith('/')) problems.push(`${path}: must start with /`);
    if (/[:*]/.test(path)) problems.push(`${path}: router syntax instead of {param}`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    for (const [method, op] of Object.entries(item as Json)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!OPERATION_METHODS.has(method)) {
        problems.push(`${where}: not an operation`);
        continue;
      }
      const operation = op as Json;
      if (typeof operation.operationId === 'string') {
        if (operationIds.has(operation.operationId))
          problems.push(`${where}: duplicate operationId`);
        operationIds.add(operation.operationId);
      }
      const parameters = (operation.parameters ?? []) as Json[];
      const seen = new Set<string>();
      for (const p of parameters) {
        const key = `${String(p.in)}:${String(p.name)}`;
        if (seen.has(key)) problems.push(`${where}: duplicate parameter ${key}`);
        seen.add(key);
        if (typeof p.name !== 'string') problems.push(`${where}: parameter without name`);
        if (!PARAMETER_LOCATIONS.has(p.in as string))
          problems.push(`${where}: parameter ${key} location`);
        if (p.in === 'path' && (p.required !== true || !templated.includes(p.name as string)))
          problems.push(
            `${where}: path parameter ${String(p.name)} must be required and templated`,
          );
        if (p.schema === undefined && p.content === undefined)
          problems.push(`${where}: parameter ${key} has no schema`);
        if (p.schema !== undefined) schema(p.schema, `${where} parameter ${String(p.name)}`);
      }
      for (const name of templated) {
        if (!parameters.some((p) => p.in === 'path' && p.name === name))
          problems.push(`${where}: {${name}} is not declared as a parameter`);
      }
      if (operation.requestBody !== undefined) {
        const body = operation.requestBody as Json;
        if (!body.content) problems.push(`${where}: requestBody without content`);
        content(body.content, `${where} requestBody`);
      }
      const responses = (operation.responses ?? {}) as Json;
      if (Object.keys(responses).length === 0) problems.push(`${where}: no responses`);
      for (const [status, response] of Object.entries(responses)) {
        if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(status))
          problems.push(`${where}: response key ${status}`);
        const r = response as Json;
        if (typeof r.description !== 'string')
          problems.push(`${where} ${status}: description required`);
        content(r.content, `${where} ${status}`);
      }
    }
  }
  return problems;
}

/** Every route the app serves, as `METHOD /path/{param}`, read from Fastify's own route tree. */
function routesOf(app: App): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]+)\))?/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    const path = stack.join('').replace(/:(\w+)/g, '{$1}');
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) {
      if (method !== 'HEAD') out.push(`${method} ${path}`);
    }
  }
  return out;
}

describe('API reference', () => {
  let t: TestApp;
  let doc: Json;
  before(async () => {
    t = await startTestApp(DIALECTS[0] ?? 'sqlite');
    doc = (await t.request({ method: 'GET', url: '/v1/openapi.json' })).data as Json;
  });
  after(async () => t.close());

  it('/v1/openapi.json is a valid OpenAPI 3.0 document', () => {
    assert.deepEqual(openApi30Problems(doc), []);
  });

  it('documents every route the server serves under /v1, and the health probes', () => {
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const method of Object.keys(item as Json))
        documented.add(`${method.toUpperCase()} ${path}`);
    }
    const served = routesOf(t.app).filter(
      (r) => r.includes(' /v1/') || r.endsWith(' /healthz') || r.endsWith(' /readyz'),
    );
    const undocumented = served.filter((r) => r !== 'GET /v1/openapi.json' && !documented.has(r));
    assert.ok(served.length >= 3, 'the route tree was read');
    assert.deepEqual(undocumented, []);
    // …and documents nothing that is not served.
    const ghost = [...documented].filter((r) => !served.includes(r));
    assert.deepEqual(ghost, []);
  });

  it('list parameters with defaults are documented as optional, path parameters as required', () => {
    const list = (doc.paths as Json)['/v1/projects'] as Json | undefined;
    const parameters = ((list?.get as Json | undefined)?.parameters ?? []) as Json[];
    for (const name of ['page', 'per_page', 'sort', 'order']) {
      const p = parameters.find((x) => x.name === name);
      assert.ok(p, `${name} documented`);
      assert.equal(p.required, false, name);
    }
  });

  it('a body that may be left out is documented as optional, others as required', () => {
    const paths = doc.paths as Json;
    const accept = (paths['/v1/invitations/{member_id}/accept'] as Json).post as Json;
    assert.equal((accept.requestBody as Json).required, false);
    assert.equal('x-optional-body' in accept, false);
    const signup = (paths['/v1/auth/signup'] as Json).post as Json;
    assert.equal((signup.requestBody as Json).required, true);
  });

  it('every operation documents the Form A error body', () => {
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const responses = (op as Json).responses as Json;
        assert.ok(responses['4XX'] && responses['5XX'], `${method} ${path}`);
      }
    }
  });

  it('/docs renders every documented operation', async () => {
    const page = await t.request({ method: 'GET', url: '/docs' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const html = page.body;
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      const escaped = path.replaceAll('&', '&amp;');
      for (const method of Object.keys(item as Json)) {
        assert.ok(
          html.includes(`${method.toUpperCase()}</span> <code>${escaped}</code>`),
          `${method.toUpperCase()} ${path} on /docs`,
        );
      }
    }
  });
});
