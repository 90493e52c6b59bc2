import { apiPath } from '@coffer/sdk';
import type { LoadPlan } from '../lib/load.js';
import type { Timing } from '../lib/measure.js';
import { targets, type Target } from '../lib/report.js';
import { LIST_QUERY, MEMBER_COUNT, READ_ENV, SECRET_COUNT, type Fixture } from './fixture.js';

export interface HttpScenario {
  id: string;
  title: string;
  expectStatus: number;
  target: Target | null;
  /** Compared also with the ceiling route sending a body of the listing's size. */
  listingSized?: boolean;
  /** Compared also with the ceiling route replaying a read's answer. */
  readSized?: boolean;
  plan(fixture: Fixture, baseUrl: string): Omit<LoadPlan, keyof Timing>;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const listPath = (f: Fixture) =>
  `${apiPath`/v1/projects/${f.projectId}/environments/${READ_ENV}/secrets`}?${LIST_QUERY}`;

const listSecrets: HttpScenario = {
  id: 'list-secrets',
  title: `list ${SECRET_COUNT} secrets, API key`,
  expectStatus: 200,
  target: targets.list,
  listingSized: true,
  plan: (f, baseUrl) => ({
    url: `${baseUrl}${listPath(f)}`,
    method: 'GET',
    headers: bearer(f.apiKeyBearer),
  }),
};

const listSecretsNotModified: HttpScenario = {
  id: 'list-secrets-304',
  title: `list ${SECRET_COUNT} secrets, API key, If-None-Match`,
  expectStatus: 304,
  target: targets.list,
  plan: (f, baseUrl) => ({
    url: `${baseUrl}${listPath(f)}`,
    method: 'GET',
    headers: { ...bearer(f.apiKeyBearer), 'if-none-match': f.listEtag },
  }),
};

const readSecret: HttpScenario = {
  id: 'read-secret',
  title: 'read one secret, API key',
  expectStatus: 200,
  target: targets.read,
  readSized: true,
  // A different secret each request, as an application reading its configuration.
  plan: (f, baseUrl) => ({
    url: `${baseUrl}/`,
    method: 'GET',
    headers: bearer(f.apiKeyBearer),
    variants: f.secretNames.map((name) => ({
      path: apiPath`/v1/projects/${f.projectId}/environments/${READ_ENV}/secrets/${name}`,
    })),
  }),
};

export const HTTP_SCENARIOS: HttpScenario[] = [
  listSecrets,
  listSecretsNotModified,
  readSecret,
  {
    id: 'write-secret',
    title: 'write one secret (durable), API key',
    expectStatus: 200,
    target: targets.write,
    plan: (f, baseUrl) => ({
      url: `${baseUrl}/`,
      method: 'PUT',
      headers: { ...bearer(f.apiKeyBearer), 'content-type': 'application/json' },
      variants: f.writes,
    }),
  },
  {
    // Right after write-secret: the ratio of the two is the cost of the keys.
    id: 'write-secret-keyed',
    title: 'write one secret (durable), API key, Idempotency-Key',
    expectStatus: 200,
    target: null,
    plan: (f, baseUrl) => ({
      url: `${baseUrl}/`,
      method: 'PUT',
      headers: { ...bearer(f.apiKeyBearer), 'content-type': 'application/json' },
      variants: f.writes,
      idempotencyKeys: true,
    }),
  },
  {
    id: 'members-list',
    title: `list ${MEMBER_COUNT} members, session`,
    expectStatus: 200,
    target: null,
    plan: (f, baseUrl) => ({
      url: `${baseUrl}${apiPath`/v1/projects/${f.projectId}/members`}?per_page=${MEMBER_COUNT}`,
      method: 'GET',
      headers: { cookie: f.sessionCookie },
    }),
  },
  {
    id: 'rate-limited-429',
    title: 'over its budget → 429, CI token',
    expectStatus: 429,
    target: null,
    plan: (f, baseUrl) => ({
      url: `${baseUrl}${apiPath`/v1/projects/${f.projectId}/environments/${READ_ENV}/secrets/${f.secretNames[0]!}`}`,
      method: 'GET',
      headers: bearer(f.ciTokenBearer),
    }),
  },
  {
    id: 'unauthenticated-401',
    title: 'unknown API key → 401',
    expectStatus: 401,
    target: null,
    plan: (f, baseUrl) => ({
      url: `${baseUrl}${listPath(f)}`,
      method: 'GET',
      headers: bearer(f.unknownBearer),
    }),
  },
];

/** Measured again with TLS off (behind a proxy) to show what HTTPS costs. */
export const PLAIN_HTTP_SCENARIOS: HttpScenario[] = [
  { ...listSecrets, id: 'http-list-secrets', title: `${listSecrets.title} (plain HTTP)` },
  { ...readSecret, id: 'http-read-secret', title: `${readSecret.title} (plain HTTP)` },
];

/** The reads measured again on three instances behind a load balancer (PostgreSQL + Redis). */
export const SCALED_OUT_SCENARIOS: HttpScenario[] = [
  listSecrets,
  listSecretsNotModified,
  readSecret,
].map((s) => ({ ...s, id: `scaled-${s.id}`, title: `${s.title}, 3 instances` }));

/** The read scenarios, whose database statements per second the PostgreSQL runs report. */
export const READ_SCENARIO_IDS = new Set([
  listSecrets.id,
  listSecretsNotModified.id,
  readSecret.id,
  ...SCALED_OUT_SCENARIOS.map((s) => s.id),
]);
