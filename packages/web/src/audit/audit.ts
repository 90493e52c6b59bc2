import type { AuditEvent } from '@coffer/sdk/client/audit';

/**
 * The names an audit event's ids stand for, as the dashboard knows them:
 * people (members, and those an event recorded by e-mail), environments and
 * the project's API keys and CI tokens.
 */
export interface AuditNames {
  user(id: string | null | undefined): string;
  environment(id: unknown): string;
  token(kind: string, id: string): string | null;
}

/** The actions the server records for a project, grouped, each with the words of the picker. */
export const AUDIT_ACTIONS: readonly { group: string; actions: readonly [string, string][] }[] = [
  {
    group: 'Secrets',
    actions: [
      ['secret.created', 'Secret created'],
      ['secret.updated', 'Secret updated'],
      ['secret.deleted', 'Secret deleted'],
      ['secret.rolled_back', 'Secret rolled back'],
      ['secret.read', 'Secret read by a token'],
      ['secrets.listed', 'Secrets listed by a token'],
      ['secret.versions_listed', 'Versions listed by a token'],
    ],
  },
  {
    group: 'Environments and project',
    actions: [
      ['environment.created', 'Environment created'],
      ['environment.updated', 'Environment renamed'],
      ['environment.deleted', 'Environment deleted'],
      ['project.created', 'Project created'],
      ['project.updated', 'Project updated'],
    ],
  },
  {
    group: 'Members',
    actions: [
      ['member.invited', 'Member invited'],
      ['member.introduced', 'Introduction link sent'],
      ['invitation.accepted', 'Invitation accepted'],
      ['invitation.declined', 'Invitation declined'],
      ['invitation.expired', 'Invitation expired'],
      ['member.role_changed', 'Role changed'],
      ['member.removed', 'Member removed'],
      ['membership.signed', 'Membership signed'],
    ],
  },
  {
    group: 'Vault',
    actions: [
      ['vault.initialized', 'Vault set up'],
      ['vault.granted', 'Project key granted'],
      ['vault.rekeyed', 'Vault re-keyed'],
    ],
  },
  {
    group: 'Tokens',
    actions: [
      ['api_key.created', 'API key created'],
      ['api_key.revoked', 'API key revoked'],
      ['ci_token.created', 'CI token created'],
      ['ci_token.revoked', 'CI token revoked'],
    ],
  },
];

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const num = (value: unknown): number | null => (typeof value === 'number' ? value : null);
const field = (value: unknown, key: string): unknown =>
  value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;

const TOKEN_KIND: Record<string, string> = { api_key: 'API key', ci_token: 'CI token' };

/** Who did it: the person, or the API key / CI token they made that acted. */
export function auditActor(event: AuditEvent, names: AuditNames): string {
  const credential = event.credential;
  if (credential && credential.kind !== 'session') {
    const kind = TOKEN_KIND[credential.kind] ?? credential.kind.replaceAll('_', ' ');
    return `${kind} ${names.token(credential.kind, credential.id) ?? credential.id}`;
  }
  return event.actor_id ? names.user(event.actor_id) : 'Coffer';
}

/**
 * What the actor did, as the rest of a sentence after their name, with names
 * rather than ids: "updated LOG_LEVEL in production (v4)".
 */
export function auditPredicate(event: AuditEvent, names: AuditNames): string {
  const d = event.data;
  const name = str(d.name);
  const version = num(d.version);
  const env = () => names.environment(d.environment_id ?? event.target?.id);
  const v = version !== null ? ` (v${version})` : '';
  const subject = () => names.user(str(d.user_id) ?? event.target?.id);
  const role = str(d.role) ?? str(field(d.after, 'role'));
  const token = (kind: string) =>
    `${TOKEN_KIND[kind]} ${str(d.name) ?? (event.target ? (names.token(kind, event.target.id) ?? event.target.id) : '')}`.trim();
  switch (event.action) {
    case 'secret.created':
      return `created ${name} in ${env()}${v}`;
    case 'secret.updated':
      return `updated ${name} in ${env()}${v}`;
    case 'secret.deleted':
      return `deleted ${name} from ${env()}`;
    case 'secret.rolled_back':
      return `rolled ${name} in ${env()} back to v${num(d.from_version) ?? '?'}${v}`;
    case 'secret.read':
      return `read ${name} in ${env()}${v}`;
    case 'secret.versions_listed':
      return `listed the versions of ${name} in ${env()}`;
    case 'secrets.listed': {
      const count = Array.isArray(d.names) ? d.names.length : null;
      return `read ${count === null ? 'the' : count === 1 ? '1' : count} secret${count === 1 ? '' : 's'} of ${env()}`;
    }
    case 'environment.created':
      return `created the environment ${str(d.name) ?? env()}`;
    case 'environment.updated':
      return `renamed the environment ${str(field(d.before, 'name'))} to ${str(field(d.after, 'name'))}`;
    case 'environment.deleted':
      return `deleted the environment ${str(d.name) ?? str(field(d.before, 'name')) ?? env()}`;
    case 'project.created':
      return `created the project ${name ?? ''}`.trim();
    case 'project.updated': {
      const renamed = str(field(d.after, 'name'));
      return renamed ? `renamed the project to ${renamed}` : 'updated the project';
    }
    case 'project.deleted':
      return `deleted the project ${name ?? ''}`.trim();
    case 'member.invited':
      return `invited ${str(d.email) ?? subject()}${role ? ` as ${role}` : ''}`;
    case 'member.introduced':
      return `made an introduction link for ${subject()}`;
    case 'member.role_changed':
      return `changed the role of ${subject()} from ${str(field(d.before, 'role'))} to ${str(field(d.after, 'role'))}`;
    case 'member.removed':
      return field(d.before, 'status') === 'pending'
        ? `withdrew the invitation of ${str(d.email) ?? subject()}`
        : `removed ${subject()}`;
    case 'invitation.accepted':
      return `accepted the invitation${role ? ` as ${role}` : ''}`;
    case 'invitation.declined':
      return 'declined the invitation';
    case 'invitation.expired':
      return `expired the invitation of ${subject()}`;
    case 'membership.signed':
      switch (d.kind) {
        case 'root':
          return 'signed the membership chain into being, as admin';
        case 'add':
          return `signed in ${subject()} as ${role} in the membership chain`;
        case 'role':
          return `signed ${subject()} as ${role} in the membership chain`;
        case 'remove':
          return `signed the removal of ${subject()} in the membership chain`;
        default:
          return `signed a statement about ${subject()} in the membership chain`;
      }
    case 'vault.initialized':
      return 'set up the vault';
    case 'vault.granted':
      return `granted the project key to ${subject()}`;
    case 'vault.rekeyed': {
      const values = num(d.versions) ?? 0;
      return `re-keyed the vault (key epoch ${num(d.from_epoch)} → ${num(d.to_epoch)}, ${values} value${values === 1 ? '' : 's'} re-encrypted)`;
    }
    case 'api_key.created':
      return `created ${token('api_key')}${role ? ` (${role})` : ''}`;
    case 'api_key.revoked':
      return `revoked ${token('api_key')}`;
    case 'ci_token.created':
      return `created ${token('ci_token')}`;
    case 'ci_token.revoked':
      return `revoked ${token('ci_token')}`;
    default:
      return `${event.action}${event.target ? ` ${event.target.type} ${event.target.id}` : ''}`;
  }
}
