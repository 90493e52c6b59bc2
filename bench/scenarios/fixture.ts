import { readFileSync } from 'node:fs';
import { Agent, fetch as undiciFetch } from 'undici';
import { CofferClient, generateBearer, ready, signUp } from '@coffer/sdk';

/** How many members the member-list scenario lists (one page of the maximum size). */
export const MEMBER_COUNT = 100;

/**
 * What the scenarios run against, set up through the real API and SDK: a user,
 * a project with its vault, secrets encrypted client-side, an API key with
 * grants, members by invitation. Fields are null when the feature they need has
 * not been built yet; the scenarios that need them are then skipped.
 */
export interface Fixture {
  /** A well-formed API key bearer that no server issued (401). */
  unknownBearer: string;
  /** The session cookie of the admin who set everything up. */
  sessionCookie: string;
  projectId: string;
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

export async function createFixture(opts: FixtureOptions): Promise<Fixture> {
  await ready();
  const started = performance.now();
  const client = new CofferClient({ baseUrl: opts.baseUrl, fetch: trustingFetch(opts.caFile) });
  const admin = await signUp(client, {
    email: 'admin@bench.example',
    name: 'Bench Admin',
    password: 'correct horse battery staple bench',
  });
  const project = await client.request<{ id: string }>('POST', '/v1/projects', {
    body: { name: 'bench', description: 'npm run bench' },
  });
  // Invitations one after another, as an admin would send them.
  for (let i = 1; i < MEMBER_COUNT; i++) {
    await client.request('POST', `/v1/projects/${project.id}/members`, {
      body: { email: `member${i}@bench.example`, role: i % 3 === 0 ? 'viewer' : 'developer' },
    });
  }
  opts.say(
    `  setup through the API: user ${admin.user.id}, project ${project.id}, ${MEMBER_COUNT - 1} invitations ` +
      `(${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  return {
    unknownBearer: generateBearer('cek_'),
    sessionCookie: `coffer_session=${client.session}`,
    projectId: project.id,
  };
}
