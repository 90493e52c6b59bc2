import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  CofferClient,
  acceptInvitation,
  createApiKey,
  createCiToken,
  createProjectWithVault,
  inviteMember,
  openVault,
  ready,
  setSecret,
  signUp,
} from '@coffer/sdk';
import { openSqlite, type SqliteConnection } from '../../src/db/sqlite-driver.js';
import { startServerProcess, type ServerProcess } from '../foundation/server-process.js';
import { eventually, invitationTokenIn } from '../members/fixtures.js';
import { outboxMails } from '../members/smtp.js';

// The generated bad-input campaign: a real server process (SQLite, or
// PostgreSQL), a project with a caller of every kind, and for every operation
// of the OpenAPI document and every caller a batch of malformed requests. Each
// answer must be a Form A error (or a valid success), never a 5xx, carry the
// rate-limit headers and no stack trace or SQL, and leave the database as it was.

export type CampaignDialect = 'sqlite' | 'postgres';

export interface CampaignOptions {
  dialect: CampaignDialect;
  /** PostgreSQL server to create a fresh database on (postgres dialect). */
  postgresUrl?: string;
  /** Malformed requests per operation and caller; every generated one when omitted. */
  perCombination?: number;
  /** Progress lines (npm run fuzz). */
  log?: (line: string) => void;
}

export interface CampaignResult {
  requests: number;
  byStatus: Record<string, number>;
  operations: number;
  callers: number;
  /** The fewest malformed requests generated for one operation and caller. */
  minimumPerCombination: number;
  /** Requests that succeeded (valid by chance, or a mutation the route ignores), by operation. */
  successes: Record<string, number>;
  failures: string[];
}

interface Caller {
  name: string;
  headers: Record<string, string>;
}

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; required: boolean }[];
  bodySchema: Schema | null;
}

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  minLength?: number;
  minimum?: number;
  minItems?: number;
  $ref?: string;
  format?: string;
  pattern?: string;
  const?: unknown;
}

interface Mutation {
  label: string;
  path: string;
  headers: Record<string, string>;
  /** Replaces the caller's credential headers (bad cookie, bad bearer). */
  dropCredential?: boolean;
  /** A function for the large ones, built only when sampled. */
  body?: string | Buffer | (() => string);
}

const MB = 1_000_000;
const CONTROL = '\u0000\u0001\u0008\u001b\u007f\u2028\u202e';
const LEAK =
  /\n\s+at |\bat [\w$.<>]+ \(|\.ts:\d|\.js:\d|\bSELECT\b|\bINSERT INTO\b|\bsqlite|postgres|kysely|SQLITE_|node_modules|syntax error at/i;

const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `coffer-fuzz-${name}-`));

/** Runs the whole campaign against a fresh server process and returns its totals. */
export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const log = options.log ?? (() => undefined);
  const dataDir = tempDir(options.dialect);
  let databaseUrl: string | null = null;
  let dropDatabase: (() => Promise<void>) | null = null;
  if (options.dialect === 'postgres') {
    if (!options.postgresUrl) throw new Error('the postgres campaign needs a PostgreSQL URL');
    const name = `coffer_fuzz_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: options.postgresUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(options.postgresUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    dropDatabase = async () => {
      const drop = new pg.Client({ connectionString: options.postgresUrl });
      await drop.connect();
      await drop.query(`drop database if exists ${name} with (force)`);
      await drop.end();
    };
  }
  let server: ServerProcess | null = null;
  const fingerprint = new StateFingerprint(dataDir, databaseUrl);
  try {
    server = await startServerProcess({
      DATA_DIR: dataDir,
      HTTP_PORT: 'off',
      DASHBOARD: 'off',
      LOG_LEVEL: 'warn',
      KDF_MIN_OPS: '1',
      KDF_MIN_MEM_KIB: '8192',
      // Raised so the campaign is answered, not refused wholesale with 429.
      RATE_LIMIT_SESSION: '1000000',
      RATE_LIMIT_API_KEY: '1000000',
      RATE_LIMIT_CI_TOKEN: '1000000',
      RATE_LIMIT_ANONYMOUS: '1000000',
      RATE_LIMIT_AUTH: '1000000',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    });
    const ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
    log(`server ${server.url} (${options.dialect})`);
    const fixture = await buildFixture(server.url, ca, dataDir);
    log('fixture: project, admin/developer/viewer users, three API keys, a CI token');

    const agent = new HttpsAgent({ ca, keepAlive: true, maxSockets: 1 });
    try {
      const doc = (await sendRaw(server.url, agent, {
        path: '/v1/openapi.json',
        headers: {},
      }).then((r) => JSON.parse(r.body))) as OpenApiDocument;
      const operations = operationsOf(doc);
      log(`${operations.length} operations in /v1/openapi.json`);
      const result: CampaignResult = {
        requests: 0,
        byStatus: {},
        operations: operations.length,
        callers: fixture.callers.length,
        minimumPerCombination: Infinity,
        successes: {},
        failures: [],
      };
      let baseline = await fingerprint.take();
      for (const operation of operations) {
        for (const caller of fixture.callers) {
          let mutations = mutationsFor(operation, fixture.ids, caller);
          result.minimumPerCombination = Math.min(result.minimumPerCombination, mutations.length);
          if (options.perCombination !== undefined)
            mutations = sample(
              mutations,
              options.perCombination,
              `${operation.path}${caller.name}`,
            );
          for (const mutation of mutations) {
            const headers = {
              ...(mutation.dropCredential ? {} : caller.headers),
              ...mutation.headers,
            };
            const where = `${operation.method} ${operation.path} as ${caller.name}: ${mutation.label}`;
            let res: RawResponse;
            const body = typeof mutation.body === 'function' ? mutation.body() : mutation.body;
            try {
              res = await sendRaw(
                server.url,
                agent,
                { path: mutation.path, headers, ...(body !== undefined ? { body } : {}) },
                operation.method,
              );
            } catch (err) {
              result.failures.push(`${where}: no answer (${(err as Error).message})`);
              continue;
            }
            result.requests++;
            result.byStatus[res.status] = (result.byStatus[res.status] ?? 0) + 1;
            for (const problem of checkAnswer(res)) result.failures.push(`${where}: ${problem}`);
            const now = await fingerprint.take();
            if (res.status < 400) {
              const key = `${operation.method} ${operation.path}`;
              result.successes[key] = (result.successes[key] ?? 0) + 1;
              if (operation.method !== 'GET') log(`  succeeded: ${where} -> ${res.status}`);
            } else if (
              now !== baseline &&
              !(await fingerprint.onlyEarlierReads(baseline, now, res.headers['x-request-id']))
            ) {
              result.failures.push(
                `${where}: ${res.status} but the database changed (${changedTables(baseline, now)})`,
              );
            }
            baseline = now;
            if (result.failures.length > 200) return result;
          }
        }
        log(`${operation.method} ${operation.path}: ${result.requests} requests so far`);
      }
      // The fixture's credentials still work: no malformed request destroyed them.
      for (const caller of fixture.callers.filter((c) => c.name !== 'none')) {
        const res = await sendRaw(server.url, agent, {
          path: `/v1/projects/${fixture.ids.project_id}`,
          headers: caller.headers,
        });
        if (res.status !== 200)
          result.failures.push(
            `after the campaign, ${caller.name} reads the project: ${res.status}`,
          );
      }
      const serverErrors = server.logs().filter((l) => l.level >= 50);
      for (const line of serverErrors.slice(0, 20))
        result.failures.push(`server logged an error: ${JSON.stringify(line).slice(0, 500)}`);
      return result;
    } finally {
      agent.destroy();
    }
  } finally {
    await server?.stop();
    await fingerprint.close();
    await dropDatabase?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The totals as one line each, for the test's diagnostics and `npm run fuzz`. */
export function summarize(result: CampaignResult, dialect: string): string[] {
  const statuses = Object.entries(result.byStatus)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([status, n]) => `${status}: ${n}`)
    .join(', ');
  const successes = Object.values(result.successes).reduce((a, b) => a + b, 0);
  return [
    `bad-input campaign (${dialect}): ${result.requests} requests, ${result.operations} operations x ${result.callers} callers (at least ${result.minimumPerCombination} generated per pair)`,
    `  by status: ${statuses}`,
    `  successes (valid by chance or ignored input): ${successes}`,
    `  failures: ${result.failures.length}`,
  ];
}

// ---------------------------------------------------------------- fixture

interface Fixture {
  callers: Caller[];
  ids: Record<string, string>;
}

async function buildFixture(baseUrl: string, ca: string, dataDir: string): Promise<Fixture> {
  await ready();
  const dispatcher = new Agent({ connect: { ca } });
  const tlsFetch = ((input: string, init?: Record<string, unknown>) =>
    undiciFetch(input, { ...init, dispatcher })) as unknown as typeof fetch;
  try {
    const user = async (name: string) => {
      const client = new CofferClient({ baseUrl, fetch: tlsFetch });
      const email = `${name}-${randomBytes(4).toString('hex')}@example.test`;
      const signed = await signUp(client, {
        email,
        name,
        password: `pw-${randomBytes(8).toString('hex')}`,
        kdfCost: { ops_limit: 1, mem_limit_kib: 8192 },
      });
      return { client, email, keys: signed.keys, session: signed.session, id: signed.user.id };
    };
    const admin = await user('admin');
    const project = await createProjectWithVault(admin.client, admin.keys, { name: 'Fuzzed' });
    const memberIds: Record<string, string> = {};
    for (const role of ['developer', 'viewer'] as const) {
      const member = await user(role);
      const invited = await inviteMember(admin.client, project.id, { email: member.email, role });
      const token = await eventually(
        async () => invitationTokenIn(await outboxMails(dataDir), invited.id),
        `the invitation e-mail to ${member.email}`,
      );
      await acceptInvitation(member.client, invited.id, token);
      memberIds[role] = invited.id;
    }
    const vault = await openVault(admin.client, project.id, admin.keys);
    await setSecret(
      { client: admin.client, projectId: project.id, keys: vault },
      'development',
      'FUZZ_SECRET',
      'value',
    );
    const keys: Record<string, { id: string; bearer: string }> = {};
    for (const role of ['admin', 'developer', 'viewer'] as const) {
      const { apiKey, credential } = await createApiKey(vault, {
        name: `fuzz-${role}`,
        role,
        ...(role === 'viewer' ? {} : { scopes: { development: 'read_write' } }),
      });
      keys[role] = { id: apiKey.id, bearer: credential.split('.')[0]! };
    }
    const ci = await createCiToken(vault, { scopes: { development: 'read' }, ttlSeconds: 3600 });
    vault.forget();
    const origin = new URL(baseUrl).origin;
    const bearer = (b: string) => ({ authorization: `Bearer ${b}` });
    return {
      callers: [
        { name: 'session', headers: { cookie: `coffer_session=${admin.client.session}`, origin } },
        { name: 'api key (admin)', headers: bearer(keys.admin!.bearer) },
        { name: 'api key (developer)', headers: bearer(keys.developer!.bearer) },
        { name: 'api key (viewer)', headers: bearer(keys.viewer!.bearer) },
        { name: 'ci token', headers: bearer(ci.credential.split('.')[0]!) },
        { name: 'none', headers: {} },
      ],
      ids: {
        project_id: project.id,
        member_id: memberIds.developer!,
        session_id: admin.session.id,
        env: 'development',
        name: 'FUZZ_SECRET',
        // Paths with `{id}`: API keys and CI tokens; the admin key's id serves both (404 for CI tokens).
        id: keys.viewer!.id,
      },
    };
  } finally {
    await dispatcher.close();
  }
}

// ---------------------------------------------------------------- the document

interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, Schema> };
}
interface OpenApiOperation {
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

function operationsOf(doc: OpenApiDocument): Operation[] {
  const resolve = (schema: Schema | undefined, depth = 0): Schema | null => {
    if (!schema || depth > 20) return null;
    if (schema.$ref) {
      const name = schema.$ref.split('/').pop()!;
      return resolve(doc.components?.schemas?.[name], depth + 1);
    }
    const out: Schema = { ...schema };
    if (schema.properties) {
      out.properties = {};
      for (const [k, v] of Object.entries(schema.properties))
        out.properties[k] = resolve(v, depth + 1) ?? {};
    }
    if (schema.items) out.items = resolve(schema.items, depth + 1) ?? {};
    return out;
  };
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    // The API's operations; the health probes are documented as outside its conventions.
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      operations.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).map((p) => ({
          name: p.name,
          in: p.in,
          required: p.required === true,
        })),
        bodySchema: resolve(op.requestBody?.content?.['application/json']?.schema),
      });
    }
  }
  return operations;
}

/** A value of the schema's shape (not necessarily accepted: patterns are not followed). */
function exampleOf(schema: Schema, depth = 0): unknown {
  if (depth > 6) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives?.length) return exampleOf(alternatives[0]!, depth + 1);
  if (schema.allOf?.length) return exampleOf(schema.allOf[0]!, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(schema.properties ?? {})) {
        if (schema.required?.includes(k)) out[k] = exampleOf(v, depth + 1);
      }
      return out;
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () =>
        exampleOf(schema.items ?? {}, depth + 1),
      );
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      return schema.format === 'date-time'
        ? '2030-01-01T00:00:00.000Z'
        : 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    default:
      return 'x';
  }
}

/** A value of another JSON type than the schema's. */
function wrongTypeOf(schema: Schema): unknown {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return 12345;
    case 'integer':
    case 'number':
      return '12';
    case 'boolean':
      return 'true';
    case 'array':
      return { '0': 'x' };
    case 'object':
      return ['x'];
    default:
      return [[]];
  }
}

// ---------------------------------------------------------------- mutations

const deepArray = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

const BAD_PATH_VALUES: [string, string][] = [
  ['..', '..'],
  ['../ traversal', '../../etc/passwd'],
  ['%2e%2e', '%2e%2e'],
  ['%2e%2e%2f', '%2e%2e%2f%2e%2e%2fetc%2fpasswd'],
  ['backslash', '..%5c..%5cwindows'],
  ['NUL', 'x%00y'],
  ['control characters', '%01%1b%7f'],
  ['bad percent-encoding', '%ZZ'],
  ['overlong UTF-8', '%C0%AE%C0%AE'],
  ['very long', 'a'.repeat(4000)],
  ['unicode', encodeURIComponent('ünïcødé-☃-🙂')],
  ['right-to-left override', encodeURIComponent('\u202eabc')],
  ['empty', ''],
  ['space', '%20'],
  ['negative number', '-1'],
  ['quote', encodeURIComponent(`p'"; drop table projects; --`)],
  ['prefixed wrong kind', 'usr_00000000000000000000000000'],
];

const BAD_QUERIES: [string, string][] = [
  ['page=0', 'page=0'],
  ['page=-1', 'page=-1'],
  ['page=1e309', 'page=1e309'],
  ['page=1.5', 'page=1.5'],
  ['page=abc', 'page=abc'],
  ['page twice', 'page=1&page=2'],
  ['page[]', 'page[]=1'],
  ['page huge', `page=${'9'.repeat(400)}`],
  ['per_page=101', 'per_page=101'],
  ['per_page=0', 'per_page=0'],
  ['per_page=NUL', 'per_page=%00'],
  ['sort=unknown', 'sort=unknown'],
  ['sort=__proto__', 'sort=__proto__'],
  ['order=sideways', 'order=sideways'],
  ['order empty', 'order='],
  ['unknown parameter', 'nope=1'],
  ['__proto__ parameter', '__proto__[x]=1'],
  ['bad percent-encoding', 'page=%ZZ'],
];

function mutationsFor(
  operation: Operation,
  ids: Record<string, string>,
  caller: Caller,
): Mutation[] {
  const pathWith = (overrides: Record<string, string> = {}) =>
    operation.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
      name in overrides ? overrides[name]! : encodeURIComponent(ids[name] ?? 'x'),
    );
  const path = pathWith();
  const unsafe = operation.method !== 'GET';
  const json = { 'content-type': 'application/json' };
  const out: Mutation[] = [];
  const add = (m: Mutation) => out.push(m);

  // Path parameters: malformed ids, traversal, very long, unicode.
  for (const param of operation.params.filter((p) => p.in === 'path')) {
    for (const [label, value] of BAD_PATH_VALUES) {
      add({
        label: `${param.name} ${label}`,
        path: pathWith({ [param.name]: value }),
        headers: {},
      });
    }
  }

  // Query strings, on operations that read them (a route without any ignores them).
  const queryNames = operation.params.filter((p) => p.in === 'query').map((p) => p.name);
  if (queryNames.length > 0) {
    for (const [label, query] of BAD_QUERIES) add({ label, path: `${path}?${query}`, headers: {} });
    for (const name of queryNames.filter(
      (n) => !['page', 'per_page', 'sort', 'order'].includes(n),
    )) {
      for (const value of ['%00', 'superuser', '..%2f..', 'a'.repeat(3000), '2030-13-45T99:99']) {
        add({
          label: `${name}=${value.slice(0, 20)}`,
          path: `${path}?${name}=${value}`,
          headers: {},
        });
      }
    }
  }

  // Bodies.
  const schema = operation.bodySchema;
  if (schema) {
    const base = exampleOf(schema) as Record<string, unknown>;
    const text = (value: unknown) => JSON.stringify(value);
    const props = Object.entries(schema.properties ?? {});
    add({ label: 'empty JSON body', path, headers: json, body: '' });
    add({ label: '{}', path, headers: json, body: '{}' });
    for (const name of schema.required ?? []) {
      const without = { ...base };
      delete without[name];
      add({ label: `missing ${name}`, path, headers: json, body: text(without) });
    }
    add({ label: 'extra field', path, headers: json, body: text({ ...base, unexpected: 1 }) });
    for (const [name, prop] of props) {
      add({
        label: `${name} wrong type`,
        path,
        headers: json,
        body: text({ ...base, [name]: wrongTypeOf(prop) }),
      });
      add({ label: `${name} null`, path, headers: json, body: text({ ...base, [name]: null }) });
      add({
        label: `${name} 1 MB string`,
        path,
        headers: json,
        body: () => text({ ...base, [name]: 'x'.repeat(MB - 1000) }),
      });
      add({
        label: `${name} control characters and NUL`,
        path,
        headers: json,
        body: text({ ...base, [name]: `a${CONTROL}b` }),
      });
      add({
        label: `${name} nested 10,000 levels`,
        path,
        headers: json,
        body: () =>
          `${text({ ...base, [name]: 0 }).slice(0, -1)},${JSON.stringify(name)}:${deepArray(10_000)}}`,
      });
      add({
        label: `${name} lone surrogate`,
        path,
        headers: json,
        body: `${text({ ...base, [name]: 0 }).slice(0, -1)},${JSON.stringify(name)}:"\\ud800"}`,
      });
      add({
        label: `${name} 1e309`,
        path,
        headers: json,
        body: `${text({ ...base, [name]: 0 }).slice(0, -1)},${JSON.stringify(name)}:1e309}`,
      });
    }
    const inner = text(base).slice(1, -1);
    const sep = inner ? ',' : '';
    add({
      label: '__proto__ key',
      path,
      headers: json,
      body: `{"__proto__":{"admin":true}${sep}${inner}}`,
    });
    add({
      label: 'constructor.prototype key',
      path,
      headers: json,
      body: `{"constructor":{"prototype":{"admin":true}}${sep}${inner}}`,
    });
    add({ label: 'duplicate keys', path, headers: json, body: `{${inner}${sep}${inner}}` });
    add({ label: 'object nested 10,000 levels', path, headers: json, body: deepObject(10_000) });
    for (const top of ['[]', '"text"', '42', 'null', 'true'])
      add({ label: `body ${top}`, path, headers: json, body: top });
  }

  // Bodies no route accepts: refused before any handler runs, whatever the route.
  for (const [label, body] of [
    ['invalid JSON', '{"a":'],
    ['unclosed object', '{"a":1'],
    ['stray bracket', ']'],
    ['single quotes', "{'a':1}"],
    ['unquoted key', '{a:1}'],
    ['trailing comma', '{"a":1,}'],
    ['bad escape', '{"a":"\\x"}'],
    ['leading zero', '{"a":01}'],
    ['NaN', 'NaN'],
    ['byte order mark', '\ufeff{}'],
    ['NUL byte', '\u0000'],
    ['array nested 10,000 levels', deepArray(10_000)],
  ] as [string, string][]) {
    // A route that takes no body ignores a JSON one: sending it would really
    // delete (or log out), which is not a malformed request.
    if (!schema && unsafe && parsesAsJson(body)) continue;
    add({ label, path, headers: json, body });
  }
  for (const type of [
    'text/plain',
    'text/html',
    'application/x-www-form-urlencoded',
    'application/xml',
    'application/octet-stream',
    'application/vnd.api+json',
    'application/jsonx',
    'multipart/form-data; boundary=x',
  ]) {
    add({ label: `content-type ${type}`, path, headers: { 'content-type': type }, body: 'a=1' });
  }
  add({
    label: 'JSON in UTF-16',
    path,
    headers: { 'content-type': 'application/json; charset=utf-16' },
    body: Buffer.from('{}', 'utf16le'),
  });
  add({ label: 'body over the limit', path, headers: json, body: `{"a":"${'x'.repeat(2 * MB)}"}` });

  // Headers and credentials.
  add({
    label: 'cookie %ZZ',
    path,
    headers: { cookie: 'coffer_session=%ZZ' },
    dropCredential: true,
  });
  add({
    label: 'cookie huge',
    path,
    headers: { cookie: `coffer_session=${'a'.repeat(12_000)}` },
    dropCredential: true,
  });
  add({
    label: 'cookie empty',
    path,
    headers: { cookie: 'coffer_session=' },
    dropCredential: true,
  });
  add({
    label: 'cookie not UTF-8',
    path,
    headers: { cookie: 'coffer_session=%C3%28' },
    dropCredential: true,
  });
  add({
    label: 'several bad cookies',
    path,
    headers: { cookie: 'a=b; coffer_session=%ZZ; coffer_session=zzz; =; ;;' },
    dropCredential: true,
  });
  add({
    label: 'cookie with control bytes',
    path,
    headers: { cookie: 'coffer_session=%00%01' },
    dropCredential: true,
  });
  add({
    label: 'bearer with key part',
    path,
    headers: { authorization: 'Bearer cek_abc.def' },
    dropCredential: true,
  });
  add({ label: 'bearer empty', path, headers: { authorization: 'Bearer ' }, dropCredential: true });
  add({
    label: 'bearer traversal',
    path,
    headers: { authorization: 'Bearer ../../x' },
    dropCredential: true,
  });
  add({
    label: 'bearer latin-1',
    path,
    headers: { authorization: 'Bearer ci_\u00e9\u00ff' },
    dropCredential: true,
  });
  add({
    label: 'basic auth',
    path,
    headers: { authorization: 'Basic YTpi' },
    dropCredential: true,
  });
  add({
    label: 'bearer huge',
    path,
    headers: { authorization: `Bearer ${'k'.repeat(10_000)}` },
    dropCredential: true,
  });
  add({ label: 'oversized header', path, headers: { 'x-padding': 'p'.repeat(20_000) } });
  if (unsafe && caller.name === 'session' && !operation.path.startsWith('/v1/auth/')) {
    add({
      label: 'foreign Origin',
      path,
      headers: { origin: 'https://evil.example' },
      ...(schema ? { body: JSON.stringify(exampleOf(schema)) } : {}),
    });
  }
  return out;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text.replace(/^\ufeff/, ''));
    return true;
  } catch {
    return false;
  }
}

/** A deterministic sample of `n` (always including the first few kinds of each group). */
function sample<T>(items: T[], n: number, seed: string): T[] {
  if (items.length <= n) return items;
  let h = createHash('sha256').update(seed).digest().readUInt32BE(0);
  const pool = [...items];
  const out: T[] = [];
  while (out.length < n) {
    h = (Math.imul(h, 1103515245) + 12345) >>> 0;
    out.push(pool.splice(h % pool.length, 1)[0]!);
  }
  return out;
}

// ---------------------------------------------------------------- the wire

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function sendRaw(
  baseUrl: string,
  agent: HttpsAgent,
  mutation: { path: string; headers: Record<string, string>; body?: string | Buffer },
  method = 'GET',
): Promise<RawResponse> {
  const target = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...mutation.headers };
    if (mutation.body !== undefined) headers['content-length'] = Buffer.byteLength(mutation.body);
    const req = httpsRequest(
      {
        host: target.hostname,
        port: target.port,
        method,
        path: mutation.path,
        headers,
        agent,
        servername: 'localhost',
      },
      (res) => {
        const chunks: Buffer[] = [];
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          // A stream (the change feed) never ends by itself: its headers and first
          // bytes are the answer, then the connection is closed.
          res.once('data', (c: Buffer) => {
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: c.toString('utf8'),
            });
            req.destroy();
          });
          res.on('error', () => undefined);
          return;
        }
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(mutation.body);
  });
}

/** What every answer must be. */
function checkAnswer(res: RawResponse): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`status ${res.status}: ${res.body.slice(0, 300)}`);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    if (!/^\d+$/.test(String(res.headers[name]))) problems.push(`${res.status} without ${name}`);
  }
  if (LEAK.test(res.body))
    problems.push(`${res.status} body leaks internals: ${res.body.slice(0, 300)}`);
  if (res.status === 204) {
    if (res.body !== '') problems.push('204 with a body');
    return problems;
  }
  if (res.status === 200 && String(res.headers['content-type']).startsWith('text/event-stream')) {
    if (!/^retry: \d+\n/.test(res.body))
      problems.push(`event stream opened with ${res.body.slice(0, 100)}`);
    return problems;
  }
  let json: unknown;
  try {
    json = JSON.parse(res.body);
  } catch {
    problems.push(`${res.status} body is not JSON: ${res.body.slice(0, 200)}`);
    return problems;
  }
  const body = json as Record<string, unknown>;
  if (res.status >= 400) {
    const error = body.error as Record<string, unknown> | undefined;
    const keys = Object.keys(body);
    if (keys.length !== 1 || !error || typeof error !== 'object') {
      problems.push(`${res.status} is not a Form A error: ${res.body.slice(0, 200)}`);
      return problems;
    }
    if (typeof error.code !== 'string' || typeof error.message !== 'string')
      problems.push(`${res.status} error without code or message`);
    if (error.request_id !== res.headers['x-request-id'])
      problems.push(`${res.status} request_id ${String(error.request_id)} is not the X-Request-Id`);
    const extra = Object.keys(error).filter(
      (k) => !['code', 'message', 'details', 'request_id'].includes(k),
    );
    if (extra.length) problems.push(`${res.status} error has extra fields ${extra.join(', ')}`);
  } else {
    const keys = Object.keys(body).sort().join(',');
    if (keys !== 'data' && keys !== 'data,pagination')
      problems.push(`${res.status} is not a { data } body: ${res.body.slice(0, 200)}`);
  }
  return problems;
}

// ---------------------------------------------------------------- the state

/**
 * A hash of every table, read directly from the database: what a rejected
 * request must leave alone. `last_used_at` columns are left out (a credential's
 * use is recorded at most once a minute, refused or not), as is the e-mail
 * outbox, which its worker drains on its own schedule.
 */
class StateFingerprint {
  private sqlite: SqliteConnection | null = null;
  private pg: pg.Client | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly databaseUrl: string | null,
  ) {}

  /** `table=hash` per table, joined: equal strings, equal state. */
  async take(): Promise<string> {
    const parts: string[] = [];
    if (this.databaseUrl) {
      if (!this.pg) {
        this.pg = new pg.Client({ connectionString: this.databaseUrl });
        await this.pg.connect();
      }
      const tables = await this.pg.query<{ table_name: string }>(
        `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`,
      );
      // One round trip: each table's rows as JSON (without last_used_at), hashed by the server.
      const names = tables.rows.map((r) => r.table_name).filter((t) => !t.includes('outbox'));
      const select = names
        .map(
          (t) =>
            `(select md5(coalesce(string_agg((to_jsonb(x) - 'last_used_at')::text, '|' order by (to_jsonb(x) - 'last_used_at')::text), '')) from "${t}" x) as "${t}"`,
        )
        .join(', ');
      const row = (await this.pg.query<Record<string, string>>(`select ${select}`)).rows[0]!;
      for (const t of names) parts.push(`${t}=${row[t]!.slice(0, 16)}`);
    } else {
      if (!this.sqlite) {
        this.sqlite = openSqlite(join(this.dataDir, 'coffer.db'), {
          readonly: true,
          fileMustExist: true,
        });
      }
      const tables = this.sqlite
        .prepare(`select name from sqlite_master where type = 'table' order by name`)
        .all() as { name: string }[];
      for (const { name } of tables) {
        if (name.includes('outbox')) continue;
        const rows = this.sqlite.prepare(`select * from "${name}"`).all() as object[];
        parts.push(`${name}=${digest(rows)}`);
      }
    }
    return parts.join(' ');
  }

  /**
   * Reads are audited in batches written up to 250 ms after their answer, so a
   * refused request may see an earlier success's audit rows land. True when
   * only the audit tables changed and no audit row carries this request's id.
   */
  async onlyEarlierReads(before: string, after: string, requestId: unknown): Promise<boolean> {
    const changed = changedTables(before, after).split(', ');
    if (!changed.every((t) => t === 'audit_events' || t === 'audit_chain_heads')) return false;
    const query = 'select count(*) as n from audit_events where request_id = $1';
    const n = this.pg
      ? Number((await this.pg.query<{ n: string }>(query, [String(requestId)])).rows[0]!.n)
      : (this.sqlite!.prepare(query.replace('$1', '?')).get(String(requestId)) as { n: number }).n;
    return n === 0;
  }

  async close(): Promise<void> {
    this.sqlite?.close();
    await this.pg?.end().catch(() => undefined);
  }
}

function digest(rows: object[]): string {
  const hash = createHash('sha256');
  for (const row of rows.map(stable).sort()) hash.update(row);
  return hash.digest('hex').slice(0, 16);
}

function changedTables(before: string, after: string): string {
  const old = new Set(before.split(' '));
  return after
    .split(' ')
    .filter((part) => !old.has(part))
    .map((part) => part.split('=')[0])
    .join(', ');
}

function stable(row: object): string {
  const entries = Object.entries(row)
    .filter(([k]) => k !== 'last_used_at')
    .map(([k, v]) => [
      k,
      Buffer.isBuffer(v) ? v.toString('hex') : v instanceof Date ? v.toISOString() : v,
    ]);
  return JSON.stringify(entries.sort(([a], [b]) => String(a).localeCompare(String(b))));
}
