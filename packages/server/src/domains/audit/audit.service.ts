import type { SharedDeps } from '../../shared-deps.js';
import type { ListParams } from '../../http/pagination.js';
import { projectAccess, requireRole } from '../../access/project-access.js';
import type { Actor } from './audit.js';
import { listAuditEvents, type AuditEventRow, type AuditFilter } from './audit.repo.js';

interface AuditEventObject {
  id: string;
  action: string;
  actor_id: string | null;
  credential: { kind: string; id: string } | null;
  ip: string | null;
  request_id: string | null;
  target: { type: string; id: string } | null;
  data: Record<string, unknown>;
  created_at: string;
}

const toAuditEvent = (row: AuditEventRow): AuditEventObject => ({
  id: row.id,
  action: row.action,
  actor_id: row.actor_id,
  credential:
    row.credential_kind && row.credential_id
      ? { kind: row.credential_kind, id: row.credential_id }
      : null,
  ip: row.ip,
  request_id: row.request_id,
  target: row.target_type && row.target_id ? { type: row.target_type, id: row.target_id } : null,
  data: JSON.parse(row.data) as Record<string, unknown>,
  created_at: row.created_at,
});

export function auditService(ctx: Pick<SharedDeps, 'db'>) {
  const db = ctx.db.kysely;
  return {
    /** The project's audit log, for admins (and admin API keys). */
    async list(
      actor: Actor,
      projectId: string,
      filter: AuditFilter,
      params: ListParams<'created_at'>,
    ) {
      const access = await projectAccess(db, actor.principal, projectId);
      requireRole(access, 'admin', 'read the audit log');
      // Stored timestamps are UTC with milliseconds; bring any offset to that form to compare.
      const iso = (value: string | undefined) =>
        value === undefined ? undefined : new Date(value).toISOString();
      const { rows, total } = await listAuditEvents(
        db,
        projectId,
        { ...filter, since: iso(filter.since), until: iso(filter.until) },
        params,
      );
      return { items: rows.map(toAuditEvent), total };
    },
  };
}
