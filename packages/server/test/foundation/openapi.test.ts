import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { createProject } from '../support/projects.js';
import { insertBearer } from './credentials.js';
import type { App } from '../../src/app.js';
import { ERROR_STATUS } from '../../src/errors.js';

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

/** Every operation of the document, as `METHOD /path` and its object. */
function operationsOf(doc: Json): [string, Json][] {
  const out: [string, Json][] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json))
      out.push([`${method.toUpperCase()} ${path}`, op as Json]);
  }
  return out;
}

const requirementsOf = (op: Json) =>
  ((op.security ?? []) as Json[]).map((r) => Object.keys(r).sort().join('+') || 'none');

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

  it('every request and response schema of every route compiles (each compiles on first use)', () => {
    const operations = Object.values(doc.paths as Json).flatMap((item) =>
      Object.keys(item as Json),
    );
    // At least a response serializer per operation, most also a request validator.
    assert.ok(t.app.compileSchemas() > operations.length);
    assert.equal(t.app.compileSchemas(), 0, 'nothing is left to compile');
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

  it('every operation has a unique operationId and names the credentials it takes', () => {
    const schemes = Object.keys(((doc.components as Json).securitySchemes ?? {}) as Json).sort();
    assert.deepEqual(schemes, ['bearer', 'session']);
    const ids = new Map<string, string>();
    for (const [where, op] of operationsOf(doc)) {
      assert.match(String(op.operationId), /^[a-z][A-Za-z]+$/, `${where}: operationId`);
      assert.equal(ids.get(op.operationId as string), undefined, `${where}: duplicate operationId`);
      ids.set(op.operationId as string, where);
      assert.ok(Array.isArray(op.security), `${where}: declares its security requirements`);
      for (const requirement of op.security as Json[]) {
        for (const name of Object.keys(requirement))
          assert.ok(schemes.includes(name), `${where}: unknown security scheme ${name}`);
      }
    }
    // The SDK's function names, where the SDK has a function for the operation.
    assert.equal(ids.get('listMembers'), 'GET /v1/projects/{project_id}/members');
    assert.equal(ids.get('inviteMember'), 'POST /v1/projects/{project_id}/members');
    assert.equal(ids.get('listProjects'), 'GET /v1/projects');
    assert.equal(
      ids.get('putSecretEnvelope'),
      'PUT /v1/projects/{project_id}/environments/{env}/secrets/{name}',
    );
  });

  it('security: none for sign-up, sign-in, recovery and the probes; a session for /v1/me, invitations and key material', () => {
    const byRequirement = new Map<string, string[]>();
    for (const [, op] of operationsOf(doc)) {
      const key = requirementsOf(op).join(' | ') || 'public';
      byRequirement.set(key, [...(byRequirement.get(key) ?? []), op.operationId as string]);
    }
    assert.deepEqual(byRequirement.get('public')?.sort(), [
      'getLiveness',
      'getReadiness',
      'getRecoveryKeys',
      'logIn',
      'prelogin',
      'resetPassword',
      'signUp',
    ]);
    assert.deepEqual(byRequirement.get('session | none'), ['logOut']);
    const sessionOnly = byRequirement.get('session') ?? [];
    assert.deepEqual(
      [
        'acceptInvitation',
        'changePassword',
        'createProject',
        'declineInvitation',
        'deleteProject',
        'getMyKeys',
        'getVaultSnapshot',
        'listInvitations',
        'me',
        'postRekey',
        'postVaultGrants',
        'revokeSession',
        'sessions',
      ].filter((id) => !sessionOnly.includes(id)),
      [],
      'session only',
    );
    // Everything else takes a session or a bearer (API key or CI token).
    assert.deepEqual([...byRequirement.keys()].sort(), [
      'bearer | session',
      'public',
      'session',
      'session | none',
    ]);
  });

  it('what the document says about credentials is what the server does', async () => {
    // A signed-in admin's project, an admin API key and a CI token of it.
    const user: TestUser = await signUp(t);
    const projectId = (await createProject(t, user)).id;
    const apiKey = await insertBearer(t, 'api_key', projectId, user.id);
    await t.testDb.db.kysely
      .updateTable('api_keys')
      .set({ role: 'admin' })
      .where('project_id', '=', projectId)
      .execute();
    const ciToken = await insertBearer(t, 'ci_token', projectId, user.id);
    const values: Record<string, string> = {
      project_id: projectId,
      session_id: user.sessionId,
      member_id: 'mem_AAAAAAAAAAAAAAAAAAAA',
      env: 'development',
    };
    // Any other path parameter: a value of its documented shape (`key_` and 20 characters).
    const sample = (p: Json | undefined) => {
      const prefix = /^\^([a-z]+)_\[0-9A-Za-z\]\{20\}\$$/.exec(
        String((p?.schema as Json | undefined)?.pattern),
      );
      return prefix ? `${prefix[1]}_${'A'.repeat(20)}` : 'x';
    };
    let checked = 0;
    for (const [where, op] of operationsOf(doc)) {
      const url = where
        .split(' ')[1]!
        .replace(
          /\{(\w+)\}/g,
          (_, name: string) =>
            values[name] ?? sample(((op.parameters ?? []) as Json[]).find((p) => p.name === name)),
        );
      const call = (headers: Record<string, string>) =>
        t.request({ method: where.split(' ')[0] as 'GET', url, headers });
      // Operations that need a body are covered by their domains' tests.
      if ((op.requestBody as Json | undefined)?.required === true) continue;
      const requirements = requirementsOf(op);
      const params = ((op.parameters ?? []) as Json[]).filter((p) => p.in === 'path');
      if (requirements.length === 1 && requirements[0] === 'session') {
        // Session only: a bearer of either kind is refused as such.
        for (const bearer of [apiKey, ciToken]) {
          const res = await call({ authorization: `Bearer ${bearer}` });
          assert.equal(res.statusCode, 403, `${where} with ${bearer.slice(0, 4)}…: ${res.body}`);
        }
        checked++;
      } else if (
        requirements.includes('bearer') &&
        where.startsWith('GET ') &&
        params.every((p) => p.name === 'project_id')
      ) {
        // A bearer: the admin API key reads it (a stream: its status, then it is closed).
        const streams = Object.keys(
          (((op.responses as Json)['200'] as Json | undefined)?.content as Json | undefined) ?? {},
        ).includes('text/event-stream');
        if (streams) {
          const res = await t.app.inject({
            method: 'GET',
            url,
            headers: { authorization: `Bearer ${apiKey}` },
            payloadAsStream: true,
          });
          assert.equal(res.statusCode, 200, where);
          res.stream().destroy();
        } else {
          const res = await call({ authorization: `Bearer ${apiKey}` });
          assert.equal(res.statusCode, 200, `${where}: ${res.body}`);
        }
        checked++;
      }
      if (requirements.length > 0 && !requirements.includes('none')) {
        const res = await call({});
        assert.equal(res.statusCode, 401, `${where} without a credential: ${res.body}`);
      }
    }
    assert.ok(checked >= 15, `${checked} operations checked`);
  });

  it('failures are documented with the shared Error schema: 400, 401, 403, 404 and 429 where they apply', () => {
    const schemas = (doc.components as Json).schemas as Json;
    const error = schemas.Error as Json;
    const inner = ((error.properties as Json).error as Json).properties as Json;
    assert.deepEqual((inner.code as Json).enum, Object.keys(ERROR_STATUS));
    for (const [where, op] of operationsOf(doc)) {
      const responses = op.responses as Json;
      const statuses = Object.keys(responses);
      for (const status of statuses.filter((s) => /^[45]/.test(s))) {
        const response = responses[status] as Json;
        assert.ok(
          typeof response.description === 'string' && response.description !== 'Default Response',
          `${where} ${status}: described`,
        );
        const schema = ((response.content as Json)['application/json'] as Json).schema;
        assert.deepEqual(schema, { $ref: '#/components/schemas/Error' }, `${where} ${status}`);
      }
      const requirements = requirementsOf(op);
      const hasPathParams = ((op.parameters ?? []) as Json[]).some((p) => p.in === 'path');
      const probe = where === 'GET /healthz' || where === 'GET /readyz';
      assert.equal(
        statuses.includes('401'),
        requirements.some((r) => r !== 'none'),
        `${where} 401`,
      );
      assert.equal(
        statuses.includes('403'),
        requirements.length > 0 && !requirements.includes('none'),
        `${where} 403`,
      );
      assert.equal(statuses.includes('404'), hasPathParams, `${where} 404`);
      assert.equal(statuses.includes('429'), !probe, `${where} 429`);
      assert.ok(
        statuses.some((s) => /^2/.test(s)),
        `${where}: a success response`,
      );
    }
    const limited = ((doc.paths as Json)['/v1/projects'] as Json).get as Json;
    const headers = ((limited.responses as Json)['429'] as Json).headers as Json;
    assert.ok(headers['Retry-After'] && headers['X-RateLimit-Remaining']);
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
