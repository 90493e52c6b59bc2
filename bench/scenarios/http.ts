import type { LoadPlan } from '../lib/load.js';
import type { Timing } from '../lib/measure.js';
import type { Target } from '../lib/report.js';
import { MEMBER_COUNT, type Fixture } from './fixture.js';

export interface HttpScenario {
  id: string;
  title: string;
  expectStatus: number;
  target: Target | null;
  /** What the fixture must provide; shown when the scenario is skipped. */
  needs: string;
  plan(fixture: Fixture, baseUrl: string): Omit<LoadPlan, keyof Timing> | null;
}

export const HTTP_SCENARIOS: HttpScenario[] = [
  {
    id: 'members-list',
    title: `list ${MEMBER_COUNT} members (session)`,
    expectStatus: 200,
    target: null,
    needs: 'members',
    plan: (f, baseUrl) => ({
      url: `${baseUrl}/v1/projects/${f.projectId}/members?per_page=${MEMBER_COUNT}`,
      method: 'GET',
      headers: { cookie: f.sessionCookie },
    }),
  },
  {
    id: 'unauthenticated-401',
    title: 'unknown API key → 401',
    expectStatus: 401,
    target: null,
    needs: 'nothing',
    plan: (f, baseUrl) => ({
      url: `${baseUrl}/v1/projects`,
      method: 'GET',
      headers: { authorization: `Bearer ${f.unknownBearer}` },
    }),
  },
];

/** Measured again with TLS off (behind a proxy) to show what HTTPS costs. */
export const PLAIN_HTTP_SCENARIOS: HttpScenario[] = [];
