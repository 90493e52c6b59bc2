import { readFileSync } from 'node:fs';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  CofferClient,
  apiPath,
  createApiKey,
  createCiToken,
  createProjectWithVault,
  encryptSecretValue,
  generateBearer,
  openVault,
  ready,
  signUp,
  toBase64url,
  type LoggedIn,
  type VaultSession,
} from '@coffer/sdk';
import { randomBytes } from 'node:crypto';

/** Secrets in the listed environment: one page of the maximum size. */
export const SECRET_COUNT = 100;
/** Members the member-list scenario lists (the admin and 99 invitations). */
export const MEMBER_COUNT = 100;
/** The environment the list and read scenarios use, and the one writes go to. */
export const READ_ENV = 'production';
export const WRITE_ENV = 'staging';
/** The query the SDK's listSecrets sends, so the server sees what real clients ask. */
export const LIST_QUERY = `page=1&per_page=${SECRET_COUNT}&sort=name&order=asc`;

/**
 * What the scenarios run against, set up through the real API and SDK: a user
 * (real Argon2id sign-up), a project with its vault, secrets encrypted
 * client-side, an API key with grants (read on production, read_write on
 * staging), a CI token, members by invitation.
 */
export interface Fixture {
  client: CofferClient;
  admin: LoggedIn;
  vault: VaultSession;
  projectId: string;
  /** `<bearer>.<key part>`: what a user puts in COFFER_TOKEN. */
  apiKeyCredential: string;
  apiKeyBearer: string;
  ciTokenBearer: string;
  /** A well-formed API key bearer that no server issued (401). */
  unknownBearer: string;
  sessionCookie: string;
  /** The ETag of the API key's listing of READ_ENV, as a client keeps it from its last fetch. */
  listEtag: string;
  /** Size of that listing's body, for the ceiling route sending as much. */
  listingBytes: number;
  /** One read of a secret as the server answered it (headers and body), for the ceiling route to replay. */
  readShape: { headers: Record<string, string>; body: string };
  /** Names of the secrets in READ_ENV. */
  secretNames: string[];
  /** For the write scenario: one request per secret of WRITE_ENV, each value encrypted for it. */
  writes: Array<{ path: string; body: string }>;
}

export interface FixtureOptions {
  baseUrl: string;
  /** The server's self-signed certificate, trusted the way the CLI trusts it (`--ca`). */
  caFile: string | null;
  say: (text: string) => void;
}

/** A fetch that trusts exactly the bench certificate, like the CLI with `--ca`. */
export function trustingFetch(caFile: string | null): typeof fetch {
  if (caFile === null) return globalThis.fetch;
  const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, 'utf8') } });
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(input as never, { ...(init as object), dispatcher } as never)) as typeof fetch;
}

/**
 * Secret values from short tokens to long connection strings and keys (250
 * bytes on average), so 100 envelopes make about 40 KB of ciphertext: the
 * listing whose target is at least 10,000 req/s with p99 at most 15 ms at 50
 * connections with an API key (`targets.list` in ../lib/report.ts).
 */
export function sampleValue(i: number): string {
  const length = [32, 64, 128, 200, 256, 320, 400, 600][i % 8]!;
  return toBase64url(randomBytes(length)).slice(0, length);
}

export const secretName = (i: number) => `BENCH_SECRET_${String(i).padStart(3, '0')}`;

/** Writes `count` secrets (names from `nameOf`) in batches of up to 1,000, encrypted client-side. */
export async function writeSecrets(
  vault: VaultSession,
  environment: { id: string; slug: string },
  count: number,
  nameOf: (i: number) => string,
  valueOf: (i: number) => string = sampleValue,
): Promise<void> {
  const { key, epoch } = await vault.environmentKey(environment.id);
  for (let start = 0; start < count; start += 1000) {
    const secrets = [];
    for (let i = start; i < Math.min(count, start + 1000); i++) {
      const name = nameOf(i);
      secrets.push({
        name,
        value: encryptSecretValue({
          projectId: vault.projectId,
          environmentId: environment.id,
          name,
          epoch,
          environmentKey: key,
          value: valueOf(i),
        }),
      });
    }
    await vault.client.request(
      'POST',
      apiPath`/v1/projects/${vault.projectId}/environments/${environment.slug}/secrets/batch`,
      { body: { secrets } },
    );
  }
}

export async function environmentsOf(
  client: CofferClient,
  projectId: string,
): Promise<Map<string, { id: string; slug: string }>> {
  const page = await client.requestPage<{ id: string; slug: string }>(
    'GET',
    apiPath`/v1/projects/${projectId}/environments`,
    { query: { per_page: 100 } },
  );
  return new Map(page.data.map((e) => [e.slug, e]));
}

export async function createFixture(opts: FixtureOptions): Promise<Fixture> {
  await ready();
  const started = performance.now();
  const client = new CofferClient({ baseUrl: opts.baseUrl, fetch: trustingFetch(opts.caFile) });
  const admin = await signUp(client, {
    email: 'admin@bench.example',
    name: 'Bench Admin',
    password: 'correct horse battery staple bench',
  });
  const project = await createProjectWithVault(client, admin.keys, { name: 'bench' });
  const vault = await openVault(client, project.id, admin.keys);
  const environments = await environmentsOf(client, project.id);
  const readEnv = environments.get(READ_ENV)!;
  const writeEnv = environments.get(WRITE_ENV)!;

  await writeSecrets(vault, readEnv, SECRET_COUNT, secretName);
  // The write scenario updates existing secrets (every answer a 200 and a new version).
  await writeSecrets(vault, writeEnv, SECRET_COUNT, secretName);
  const { credential: apiKeyCredential } = await createApiKey(vault, {
    name: 'bench',
    role: 'developer',
    scopes: { [READ_ENV]: 'read', [WRITE_ENV]: 'read_write' },
  });
  const { credential: ciCredential } = await createCiToken(vault, {
    name: 'bench 429',
    scopes: { [READ_ENV]: 'read' },
  });

  // Invitations one after another, as an admin would send them.
  for (let i = 1; i < MEMBER_COUNT; i++) {
    await client.request('POST', apiPath`/v1/projects/${project.id}/members`, {
      body: { email: `member${i}@bench.example`, role: i % 3 === 0 ? 'viewer' : 'developer' },
    });
  }

  const { key, epoch } = await vault.environmentKey(writeEnv.id);
  const writes = Array.from({ length: SECRET_COUNT }, (_, i) => {
    const name = secretName(i);
    const value = encryptSecretValue({
      projectId: project.id,
      environmentId: writeEnv.id,
      name,
      epoch,
      environmentKey: key,
      value: sampleValue(i),
    });
    return {
      path: apiPath`/v1/projects/${project.id}/environments/${WRITE_ENV}/secrets/${name}`,
      body: JSON.stringify({ value }),
    };
  });

  const apiKeyBearer = apiKeyCredential.split('.')[0]!;
  const listing = await fetchWithBearer(
    opts,
    `${apiPath`/v1/projects/${project.id}/environments/${READ_ENV}/secrets`}?${LIST_QUERY}`,
    apiKeyBearer,
  );
  // A secret whose value has the fixture's mean length (256 characters; sampleValue).
  const read = await fetchWithBearer(
    opts,
    apiPath`/v1/projects/${project.id}/environments/${READ_ENV}/secrets/${secretName(4)}`,
    apiKeyBearer,
  );
  if (!read.ok) throw new Error(`reading a secret: ${read.status}`);
  const readHeaders: Record<string, string> = {};
  read.headers.forEach((value, name) => (readHeaders[name] = value));
  const readShape = { headers: readHeaders, body: read.body };
  const listEtag = listing.headers.get('etag');
  if (!listing.ok || !listEtag) throw new Error(`listing secrets: ${listing.status}, no ETag`);

  opts.say(
    `  setup through the API and SDK: sign-up, project with vault, ${SECRET_COUNT} secrets, API key, CI token, ` +
      `${MEMBER_COUNT - 1} invitations (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  return {
    client,
    admin,
    vault,
    projectId: project.id,
    apiKeyCredential,
    apiKeyBearer,
    ciTokenBearer: ciCredential.split('.')[0]!,
    unknownBearer: generateBearer('cek_'),
    sessionCookie: `coffer_session=${client.session}`,
    listEtag,
    listingBytes: listing.bytes,
    readShape,
    secretNames: Array.from({ length: SECRET_COUNT }, (_, i) => secretName(i)),
    writes,
  };
}

async function fetchWithBearer(opts: FixtureOptions, path: string, bearer: string) {
  const response = await trustingFetch(opts.caFile)(`${opts.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${bearer}` },
  });
  const raw = Buffer.from(await response.arrayBuffer());
  return {
    ok: response.ok,
    status: response.status,
    headers: response.headers,
    bytes: raw.length,
    body: raw.toString('utf8'),
  };
}
