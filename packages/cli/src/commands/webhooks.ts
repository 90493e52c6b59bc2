import {
  allEnvironments,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhookDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
  WEBHOOK_EVENT_KINDS,
  type CofferClient,
  type Webhook,
  type WebhookDelivery,
  type WebhookEventKind,
  type WebhookInput,
  type WebhookWithSecret,
} from '@coffer/sdk';
import {
  list as listOption,
  PROJECT_OPTION,
  str,
  YES_OPTION,
  type Command,
  type Options,
  type Values,
} from '../cli/command.js';
import { parseDuration } from '../cli/durations.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson, printLine, printTable, shortTime } from '../cli/output.js';
import { confirmDestructive } from '../cli/prompt.js';
import type { Context } from '../context.js';
import { allPages, resolveId } from '../resolve.js';
import { inProject } from '../scope.js';

const SHOWN_ONCE =
  'The signing secret, shown once: give it to the receiver to verify requests (docs/webhooks.md):';

const FILTER_OPTIONS: Options = {
  env: {
    type: 'string',
    short: 'e',
    multiple: true,
    value: 'ENV',
    description: 'only events of this environment (repeatable; default every environment)',
  },
  event: {
    type: 'string',
    multiple: true,
    value: 'KIND',
    description: `only this event kind (repeatable; default every kind): ${WEBHOOK_EVENT_KINDS.join(', ')}`,
  },
  description: { type: 'string', short: 'd', value: 'TEXT', description: 'what it is for' },
};

function eventKinds(values: Values, command: string): WebhookEventKind[] | undefined {
  const kinds = listOption(values, 'event');
  if (kinds.length === 0) return undefined;
  for (const k of kinds) {
    if (!(WEBHOOK_EVENT_KINDS as readonly string[]).includes(k)) {
      throw new UsageError(
        `--event must be one of ${WEBHOOK_EVENT_KINDS.join(', ')}, not "${k}"`,
        command,
      );
    }
  }
  return kinds as WebhookEventKind[];
}

/** The filters given on the command line (absent ones left out). */
function filters(values: Values, command: string): Partial<WebhookInput> {
  const envs = listOption(values, 'env');
  const kinds = eventKinds(values, command);
  const description = str(values, 'description');
  return {
    ...(envs.length ? { environments: envs } : {}),
    ...(kinds ? { event_kinds: kinds } : {}),
    ...(description !== undefined ? { description } : {}),
  };
}

/** A webhook by id (`whk_…`) or by its URL. */
const webhookId = (client: CofferClient, project: string, ref: string) =>
  resolveId(
    ref,
    'whk_',
    'webhook',
    () => allPages((page, per_page) => listWebhooks(client, project, { page, per_page })),
    (w) => [w.url],
  );

const state = (w: Webhook) =>
  w.enabled ? 'enabled' : w.disabled_reason === 'failing' ? 'disabled (failing)' : 'disabled';

async function printWebhook(
  ctx: Context,
  client: CofferClient,
  project: string,
  w: Webhook | WebhookWithSecret,
): Promise<void> {
  if (ctx.json) return printJson(w);
  const slugs = new Map((await allEnvironments(client, project)).map((e) => [e.id, e.slug]));
  printTable(
    ['field', 'value'],
    [
      ['id', w.id],
      ['url', w.url],
      ['state', state(w)],
      ['environments', w.environments.map((id) => slugs.get(id) ?? id).join(' ') || 'all'],
      ['events', w.event_kinds.join(' ') || 'all'],
      ...(w.description ? [['description', w.description]] : []),
      ...(w.failing_since ? [['failing since', shortTime(w.failing_since)]] : []),
      ...(w.previous_secret_expires_at
        ? [['old secret signs until', shortTime(w.previous_secret_expires_at)]]
        : []),
    ],
  );
  if ('secret' in w) {
    note(SHOWN_ONCE);
    printLine(w.secret);
  }
}

const list: Command = {
  name: 'webhooks list',
  summary: "list the project's webhooks (admins)",
  options: PROJECT_OPTION,
  async run({ values }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const hooks = await allPages((page, per_page) =>
      listWebhooks(client, project, { page, per_page }),
    );
    if (ctx.json) return printJson(hooks);
    printTable(
      ['id', 'url', 'state', 'events', 'created'],
      hooks.map((w) => [
        w.id,
        w.url,
        state(w),
        w.event_kinds.join(' ') || 'all',
        shortTime(w.created_at),
      ]),
    );
  },
};

const create: Command = {
  name: 'webhooks create',
  summary: 'register a webhook (admins); prints its signing secret once',
  args: 'URL',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    ...FILTER_OPTIONS,
    disabled: { type: 'boolean', description: 'register it switched off' },
  },
  description: [
    'The receiver gets the change feed’s events (names and ids, never a value), signed as',
    'Standard Webhooks do. The URL must be https and reach a public address unless the',
    'server’s operator allows otherwise (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE).',
  ].join('\n'),
  async run({ values, positionals }) {
    const input = filters(values, 'webhooks create');
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const created = await createWebhook(client, project, {
      url: positionals[0]!,
      ...input,
      ...(values.disabled === true ? { enabled: false } : {}),
    });
    await printWebhook(ctx, client, project, created);
  },
};

const show: Command = {
  name: 'webhooks get',
  summary: 'show a webhook',
  args: 'WEBHOOK',
  positionals: [1, 1],
  options: PROJECT_OPTION,
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const id = await webhookId(client, project, positionals[0]!);
    await printWebhook(ctx, client, project, await getWebhook(client, project, id));
  },
};

const update: Command = {
  name: 'webhooks update',
  summary: "change a webhook's URL, filters, or switch it on or off",
  args: 'WEBHOOK',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    ...FILTER_OPTIONS,
    url: { type: 'string', value: 'URL', description: 'a new receiver URL' },
    'all-envs': { type: 'boolean', description: 'every environment again' },
    'all-events': { type: 'boolean', description: 'every event kind again' },
    enable: { type: 'boolean', description: 'switch it on (after a failure, too)' },
    disable: { type: 'boolean', description: 'switch it off' },
  },
  async run({ values, positionals }) {
    if (values.enable === true && values.disable === true) {
      throw new UsageError('--enable and --disable exclude each other', 'webhooks update');
    }
    const url = str(values, 'url');
    const changes: Partial<WebhookInput> = {
      ...filters(values, 'webhooks update'),
      ...(url !== undefined ? { url } : {}),
      ...(values['all-envs'] === true ? { environments: [] } : {}),
      ...(values['all-events'] === true ? { event_kinds: [] } : {}),
      ...(values.enable === true ? { enabled: true } : {}),
      ...(values.disable === true ? { enabled: false } : {}),
    };
    if (Object.keys(changes).length === 0) {
      throw new UsageError('nothing to change: see --help', 'webhooks update');
    }
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const id = await webhookId(client, project, positionals[0]!);
    await printWebhook(ctx, client, project, await updateWebhook(client, project, id, changes));
  },
};

const remove: Command = {
  name: 'webhooks delete',
  summary: 'delete a webhook, its queue and its delivery log',
  args: 'WEBHOOK',
  positionals: [1, 1],
  options: { ...PROJECT_OPTION, ...YES_OPTION },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const id = await webhookId(client, project, positionals[0]!);
    await confirmDestructive(values.yes === true, `Delete webhook ${id}?`);
    await deleteWebhook(client, project, id);
    if (ctx.json) return printJson({ deleted: id });
    note(`Deleted ${id}.`);
  },
};

const rotate: Command = {
  name: 'webhooks rotate-secret',
  summary: 'a new signing secret, printed once; the old one keeps signing for a while',
  args: 'WEBHOOK',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    overlap: {
      type: 'string',
      value: 'DURATION',
      description: 'how long the old secret still signs too (e.g. 2h, 0s; default 24h, at most 7d)',
    },
  },
  async run({ values, positionals }) {
    const overlap = str(values, 'overlap');
    const overlapSeconds =
      overlap === undefined
        ? undefined
        : parseDuration(overlap, '--overlap', 'webhooks rotate-secret');
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const id = await webhookId(client, project, positionals[0]!);
    const rotated = await rotateWebhookSecret(
      client,
      project,
      id,
      overlapSeconds === undefined ? {} : { overlap_seconds: overlapSeconds },
    );
    await printWebhook(ctx, client, project, rotated);
  },
};

const attemptText = (d: WebhookDelivery) => {
  const last = d.log.at(-1);
  if (!last) return '-';
  return `${last.status_code ?? '-'} ${last.duration_ms} ms${last.error ? ` ${last.error}` : ''}`;
};

const test: Command = {
  name: 'webhooks test',
  summary: 'send a test event and wait for its first attempt',
  args: 'WEBHOOK',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    'no-wait': { type: 'boolean', description: 'queue it and return at once' },
  },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const id = await webhookId(client, project, positionals[0]!);
    const queued = await testWebhook(client, project, id);
    let delivery = queued;
    if (values['no-wait'] !== true) {
      const deadline = Date.now() + 30_000;
      while (delivery.log.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const page = await listWebhookDeliveries(client, project, id, { per_page: 100 });
        delivery = page.data.find((d) => d.id === queued.id) ?? delivery;
      }
    }
    if (ctx.json) return printJson(delivery);
    if (delivery.log.length === 0) {
      note(`Queued test event ${delivery.id}; see \`coffer webhooks deliveries ${id}\`.`);
      return;
    }
    if (delivery.status === 'delivered') {
      const tries = delivery.log.length > 1 ? ` on attempt ${delivery.log.length}` : '';
      note(`Delivered ${delivery.id}${tries}: ${attemptText(delivery)}.`);
      return;
    }
    const last = delivery.log.at(-1)!;
    throw new CliError(
      'webhook_failed',
      `the receiver did not accept test event ${delivery.id}: ${attemptText(delivery)}${last.response_excerpt ? ` (${last.response_excerpt})` : ''}; ${delivery.status === 'pending' ? 'it will be retried' : 'it was not delivered'}`,
    );
  },
};

const deliveries: Command = {
  name: 'webhooks deliveries',
  summary: "a webhook's delivery log: each event, its attempts and the receiver's answers",
  args: 'WEBHOOK',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    status: { type: 'string', value: 'STATUS', description: 'pending, delivered or failed' },
    limit: { type: 'string', value: 'N', description: 'the newest N (default 20, at most 100)' },
  },
  async run({ values, positionals }) {
    const status = str(values, 'status');
    if (status !== undefined && !['pending', 'delivered', 'failed'].includes(status)) {
      throw new UsageError('--status must be pending, delivered or failed', 'webhooks deliveries');
    }
    const limit = Number(str(values, 'limit') ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new UsageError('--limit must be a whole number from 1 to 100', 'webhooks deliveries');
    }
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const id = await webhookId(client, project, positionals[0]!);
    const page = await listWebhookDeliveries(client, project, id, {
      per_page: limit,
      ...(status ? { status: status as WebhookDelivery['status'] } : {}),
    });
    if (ctx.json) return printJson(page.data);
    printTable(
      ['id', 'event', 'status', 'attempts', 'last answer', 'created', 'next attempt'],
      page.data.map((d) => [
        d.id,
        d.event_kind,
        d.status,
        String(d.attempts),
        attemptText(d),
        shortTime(d.created_at),
        shortTime(d.next_attempt_at),
      ]),
    );
  },
};

export const commands: Command[] = [list, create, show, update, remove, rotate, test, deliveries];
