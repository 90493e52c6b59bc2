import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { newId } from '../../ids.js';
import type { Principal } from '../../http/principal.js';

/** Who did something, from where: captured from the request, passed to services. */
export interface Actor {
  readonly principal: Principal | null;
  readonly ip: string | null;
  readonly requestId: string | null;
}

export const actorOf = (request: FastifyRequest): Actor => ({
  principal: request.principal,
  ip: request.ip ?? null,
  requestId: request.id ?? null,
});

export interface AuditEntry {
  projectId: string | null;
  /** Dotted verb, e.g. `member.invited`, `member.role_changed`, `secret.read`. */
  action: string;
  targetType?: string;
  targetId?: string;
  /** Before/after values and other facts. Never secret values or key material. */
  data?: Record<string, unknown>;
}

/**
 * Appends an audit event. Call it with the transaction's handle so the event
 * commits (or rolls back) together with the change it records.
 */
export async function recordAudit(
  db: Kysely<Database>,
  actor: Actor,
  entry: AuditEntry,
  at: Date,
): Promise<void> {
  const p = actor.principal;
  await db
    .insertInto('audit_events')
    .values({
      id: newId('auditEvent'),
      project_id: entry.projectId,
      action: entry.action,
      actor_id: p?.userId ?? null,
      credential_kind: p?.kind ?? null,
      credential_id: p ? (p.kind === 'session' ? p.sessionId : p.id) : null,
      ip: actor.ip,
      request_id: actor.requestId,
      target_type: entry.targetType ?? null,
      target_id: entry.targetId ?? null,
      data: JSON.stringify(entry.data ?? {}),
      created_at: at.toISOString(),
    })
    .execute();
}
