import { apiPath, type CofferClient, type Page } from './http.js';

/** One entry of a project's audit log. Never holds a secret value or key. */
export interface AuditEvent {
  id: string;
  /** A dotted verb: `secret.updated`, `member.invited`, `secrets.listed`, … */
  action: string;
  /** The accountable user, for token actions the token's creator. */
  actor_id: string | null;
  credential: { kind: 'session' | 'api_key' | 'ci_token' | (string & {}); id: string } | null;
  ip: string | null;
  request_id: string | null;
  target: { type: string; id: string } | null;
  data: Record<string, unknown>;
  created_at: string;
}

export interface AuditQuery {
  page?: number;
  per_page?: number;
  order?: 'asc' | 'desc';
  action?: string;
  actor_id?: string;
  /** ISO 8601: events at or after this time. */
  since?: string;
  /** ISO 8601: events before this time. */
  until?: string;
}

/** `GET /v1/projects/{p}/audit-events`: admins only, newest first by default. */
export const listAuditEvents = (
  client: CofferClient,
  projectId: string,
  query: AuditQuery = {},
): Promise<Page<AuditEvent>> =>
  client.requestPage<AuditEvent>('GET', apiPath`/v1/projects/${projectId}/audit-events`, {
    query: { ...query },
  });
