import type { Kysely } from 'kysely';
import type { SharedDeps } from '../../shared-deps.js';
import type { Database } from '../../db/schema.js';
import { inSnapshot } from '../../db/database.js';
import { AppError, notFound, type ErrorDetail } from '../../errors.js';
import { newId } from '../../ids.js';
import type { ListParams, Page } from '../../http/pagination.js';
import type { Principal } from '../../http/principal.js';
import {
  projectAccess,
  requireRole,
  requireSession,
  type ProjectAccess,
} from '../../access/project-access.js';
import { audit, type Actor } from '../audit/audit.js';
import type { VaultService } from '../vault/vault.service.js';
import { parseWebhookUrl, resolveTarget, WebhookTargetError } from './address-guard.js';
import { sealSecret } from './secret-box.js';
import { newSigningSecret } from './signing.js';
import * as repo from './webhooks.repo.js';
import { TEST_EVENT_KIND, type WebhookEventKind } from './webhooks.schemas.js';

type WebhooksDeps = Pick<SharedDeps, 'db' | 'clock' | 'config'> & {
  vault: Pick<VaultService, 'environmentsOf'>;
  /** Wakes the delivery worker after a commit that queued deliveries. */
  wakeDelivery: () => void;
  /** The project's latest change-feed event id: where a new or re-enabled webhook starts. */
  latestEventId: (db: Kysely<Database>, projectId: string) => Promise<string>;
};

interface WebhookInput {
  url: string;
  description?: string;
  environments?: string[];
  event_kinds?: WebhookEventKind[];
  enabled?: boolean;
}

/** How long the replaced secret still signs after a rotation, unless the request says. */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 24 * 3600;

const parseList = (json: string) => JSON.parse(json) as string[];

/** The origin of a URL: what the audit log records (a path or query may hold a receiver's token). */
const originOf = (url: string) => new URL(url).origin;

function webhookView(row: repo.WebhookRow, now: string) {
  const overlapEnds =
    row.previous_secret_expires_at && row.previous_secret_expires_at > now
      ? row.previous_secret_expires_at
      : null;
  return {
    id: row.id,
    project_id: row.project_id,
    url: row.url,
    description: row.description,
    environments: parseList(row.environments),
    event_kinds: parseList(row.event_kinds),
    enabled: row.enabled === 1,
    disabled_reason: row.disabled_reason,
    disabled_at: row.disabled_at,
    failing_since: row.failing_since,
    previous_secret_expires_at: overlapEnds,
    created_by: row.created_by,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export type Webhook = ReturnType<typeof webhookView>;

function deliveryView(row: repo.DeliveryRow, attempts: readonly repo.AttemptRow[]) {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_kind: row.event_kind,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    created_at: row.created_at,
    finished_at: row.finished_at,
    log: attempts.map((a) => ({
      attempt: a.attempt,
      started_at: a.started_at,
      duration_ms: a.duration_ms,
      outcome: a.outcome,
      status_code: a.status_code,
      error: a.error,
      response_excerpt: a.response_excerpt,
    })),
  };
}

/** Maps environment ids or slugs to ids; unknown ones are a 422 naming them. */
function resolveEnvironments(
  environments: readonly { id: string; slug: string }[],
  requested: readonly string[],
): string[] {
  const byRef = new Map<string, string>();
  for (const e of environments) {
    byRef.set(e.id, e.id);
    byRef.set(e.slug, e.id);
  }
  const ids: string[] = [];
  const unknown: ErrorDetail[] = [];
  requested.forEach((ref, i) => {
    const id = byRef.get(ref);
    if (!id) unknown.push({ field: `environments.${i}`, issue: 'not_found', value: ref });
    else if (!ids.includes(id)) ids.push(id);
  });
  if (unknown.length) {
    throw new AppError('unprocessable', 'No such environment in this project', unknown);
  }
  return ids;
}

/**
 * Registering, changing and inspecting webhooks: signed-in admins only (a
 * webhook sends the project's activity to a URL of the admin's choosing; API
 * keys and CI tokens cannot, nor can developers and viewers).
 */
export function webhooksService(deps: WebhooksDeps) {
  const { db, clock, config, vault, wakeDelivery, latestEventId } = deps;
  const kysely = db.kysely;
  const settings = config.webhooks;

  async function adminAccess(principal: Principal | null, projectId: string, action: string) {
    const access = await projectAccess(kysely, principal, projectId);
    requireSession(principal, action);
    requireRole(access, 'admin', action);
    return access;
  }

  async function webhookOf(access: ProjectAccess, id: string, handle: Kysely<Database> = kysely) {
    const row = await repo.findWebhook(handle, access.projectId, id);
    if (!row) throw notFound('Webhook');
    return row;
  }

  /** The URL checked as a delivery would check it; a refusal is a 4xx naming the reason. */
  async function checkUrl(raw: string): Promise<string> {
    try {
      const url = parseWebhookUrl(raw, settings);
      await resolveTarget(url, settings);
      return url.toString();
    } catch (err) {
      if (!(err instanceof WebhookTargetError)) throw err;
      const detail: ErrorDetail = {
        field: 'url',
        issue: err.issue,
        ...(err.address ? { address: err.address } : {}),
      };
      throw new AppError(
        err.issue === 'invalid' ? 'validation_error' : 'unprocessable',
        err.message,
        [detail],
      );
    }
  }

  return {
    async create(actor: Actor, projectId: string, input: WebhookInput) {
      const access = await adminAccess(actor.principal, projectId, 'manage webhooks');
      const url = await checkUrl(input.url);
      const secret = newSigningSecret();
      const now = clock.now();
      const at = now.toISOString();
      const id = newId('webhook');
      const row = await kysely.transaction().execute(async (trx) => {
        const environments = resolveEnvironments(
          await vault.environmentsOf(trx, access.projectId),
          input.environments ?? [],
        );
        const enabled = input.enabled ?? true;
        await repo.insertWebhook(trx, {
          id,
          project_id: access.projectId,
          url,
          description: input.description ?? '',
          environments: JSON.stringify(environments),
          event_kinds: JSON.stringify(input.event_kinds ?? []),
          enabled: enabled ? 1 : 0,
          disabled_reason: enabled ? null : 'admin',
          disabled_at: enabled ? null : at,
          secret: sealSecret(secret, id, settings.secretKey),
          previous_secret: null,
          previous_secret_expires_at: null,
          event_cursor: await latestEventId(trx, access.projectId),
          delivery_seq: 0,
          failing_since: null,
          locked_until: null,
          created_by: access.userId,
          created_at: at,
          updated_at: at,
        });
        await audit(
          trx,
          { actor, projectId: access.projectId, at: now },
          'webhook.created',
          ['webhook', id],
          { origin: originOf(url), environments, event_kinds: input.event_kinds ?? [] },
        );
        return (await repo.webhookById(trx, id))!;
      });
      return { ...webhookView(row, at), secret };
    },

    async list(
      principal: Principal | null,
      projectId: string,
      params: ListParams<'created_at' | 'url'>,
    ): Promise<Page<Webhook>> {
      const access = await adminAccess(principal, projectId, 'manage webhooks');
      const { rows, total } = await repo.listWebhooks(kysely, access.projectId, params);
      const now = clock.now().toISOString();
      return { items: rows.map((r) => webhookView(r, now)), total };
    },

    async get(principal: Principal | null, projectId: string, id: string) {
      const access = await adminAccess(principal, projectId, 'manage webhooks');
      return webhookView(await webhookOf(access, id), clock.now().toISOString());
    },

    async update(actor: Actor, projectId: string, id: string, input: Partial<WebhookInput>) {
      const access = await adminAccess(actor.principal, projectId, 'manage webhooks');
      const url = input.url === undefined ? undefined : await checkUrl(input.url);
      const now = clock.now();
      const at = now.toISOString();
      const row = await kysely.transaction().execute(async (trx) => {
        const before = await webhookOf(access, id, trx);
        const changes: Parameters<typeof repo.updateWebhook>[2] = { updated_at: at };
        const changed: Record<string, unknown> = {};
        if (url !== undefined && url !== before.url) {
          changes.url = url;
          changed.origin = originOf(url);
        }
        if (input.description !== undefined) changes.description = input.description;
        if (input.environments !== undefined) {
          const environments = resolveEnvironments(
            await vault.environmentsOf(trx, access.projectId),
            input.environments,
          );
          changes.environments = JSON.stringify(environments);
          changed.environments = environments;
        }
        if (input.event_kinds !== undefined) {
          changes.event_kinds = JSON.stringify(input.event_kinds);
          changed.event_kinds = input.event_kinds;
        }
        if (input.enabled !== undefined && input.enabled !== (before.enabled === 1)) {
          changed.enabled = input.enabled;
          if (input.enabled) {
            // Starts again from now: what happened while it was off is not sent.
            Object.assign(changes, {
              enabled: 1,
              disabled_reason: null,
              disabled_at: null,
              failing_since: null,
              event_cursor: await latestEventId(trx, access.projectId),
            });
          } else {
            Object.assign(changes, { enabled: 0, disabled_reason: 'admin', disabled_at: at });
            await repo.failPending(trx, id, 'the webhook was disabled', at);
          }
        }
        await repo.updateWebhook(trx, id, changes);
        await audit(
          trx,
          { actor, projectId: access.projectId, at: now },
          'webhook.updated',
          ['webhook', id],
          changed,
        );
        return (await repo.webhookById(trx, id))!;
      });
      return webhookView(row, at);
    },

    async remove(actor: Actor, projectId: string, id: string): Promise<void> {
      const access = await adminAccess(actor.principal, projectId, 'manage webhooks');
      const now = clock.now();
      await kysely.transaction().execute(async (trx) => {
        const row = await webhookOf(access, id, trx);
        await repo.deleteWebhook(trx, id);
        await audit(
          trx,
          { actor, projectId: access.projectId, at: now },
          'webhook.deleted',
          ['webhook', id],
          { origin: originOf(row.url) },
        );
      });
    },

    /**
     * A new signing secret, shown once. The old one keeps signing next to it
     * (both signatures are sent) for `overlap_seconds`, so receivers can switch
     * without dropping a delivery.
     */
    async rotateSecret(
      actor: Actor,
      projectId: string,
      id: string,
      input: { overlap_seconds?: number } = {},
    ) {
      const access = await adminAccess(actor.principal, projectId, 'manage webhooks');
      const overlap = input.overlap_seconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
      const secret = newSigningSecret();
      const now = clock.now();
      const at = now.toISOString();
      const row = await kysely.transaction().execute(async (trx) => {
        const before = await webhookOf(access, id, trx);
        const expires = new Date(now.getTime() + overlap * 1000).toISOString();
        await repo.updateWebhook(trx, id, {
          secret: sealSecret(secret, id, settings.secretKey),
          previous_secret: overlap > 0 ? before.secret : null,
          previous_secret_expires_at: overlap > 0 ? expires : null,
          updated_at: at,
        });
        await audit(
          trx,
          { actor, projectId: access.projectId, at: now },
          'webhook.secret_rotated',
          ['webhook', id],
          { overlap_seconds: overlap },
        );
        return (await repo.webhookById(trx, id))!;
      });
      return { ...webhookView(row, at), secret };
    },

    /** Queues a `webhook.test` event behind what is already queued, and wakes the worker. */
    async sendTest(actor: Actor, projectId: string, id: string) {
      const access = await adminAccess(actor.principal, projectId, 'manage webhooks');
      const now = clock.now();
      const at = now.toISOString();
      const [delivery] = await kysely.transaction().execute(async (trx) => {
        const row = await webhookOf(access, id, trx);
        if (row.enabled !== 1) {
          throw new AppError('unprocessable', 'The webhook is disabled; enable it to send a test', [
            { field: 'enabled', issue: 'disabled' },
          ]);
        }
        return repo.enqueueDeliveries(
          trx,
          id,
          [
            {
              eventId: null,
              eventKind: TEST_EVENT_KIND,
              payload: () =>
                JSON.stringify({
                  type: TEST_EVENT_KIND,
                  timestamp: at,
                  data: {
                    project_id: access.projectId,
                    webhook_id: id,
                    message: 'A test event sent from Coffer',
                  },
                }),
            },
          ],
          at,
        );
      });
      wakeDelivery();
      return deliveryView(delivery!, []);
    },

    async deliveries(
      principal: Principal | null,
      projectId: string,
      id: string,
      params: ListParams<'created_at'> & { status?: repo.DeliveryRow['status'] },
    ): Promise<Page<ReturnType<typeof deliveryView>>> {
      const access = await adminAccess(principal, projectId, 'manage webhooks');
      await webhookOf(access, id);
      // One snapshot: an attempt recorded between two reads would otherwise show
      // in the log of a delivery whose status is from before it.
      const { rows, total, attempts } = await inSnapshot(kysely, db.dialect, async (trx) => {
        const page = await repo.listDeliveries(trx, id, params, params.status);
        const ids = page.rows.map((r) => r.id);
        return { ...page, attempts: await repo.attemptsOf(trx, ids) };
      });
      return {
        items: rows.map((r) =>
          deliveryView(
            r,
            attempts.filter((a) => a.delivery_id === r.id),
          ),
        ),
        total,
      };
    },
  };
}

export type WebhooksService = ReturnType<typeof webhooksService>;
