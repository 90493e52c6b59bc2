import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  CofferClient,
  acceptInvitation,
  apiPath,
  decryptSecretValue,
  encryptSecretValue,
  fingerprint,
  signUp,
  type UserKeys,
  type VaultSession,
} from '../src/index.js';
import { startTestApp, type TestApp, type TestClock } from '../../server/test/support/app.js';
import type { DialectName } from '../../server/src/db/database.js';
import { eventually, invitationTokenIn } from '../../server/test/members/fixtures.js';
import { outboxMails } from '../../server/test/members/smtp.js';

// The SDK's vault operations against the REAL server: the test app of the server
// package, listening on a local port, reached over HTTP by the SDK's client.

export interface Server {
  t: TestApp;
  baseUrl: string;
  close(): Promise<void>;
}

export async function startServer(
  dialect: DialectName,
  options: { clock?: TestClock } = {},
): Promise<Server> {
  // Plain HTTP on 127.0.0.1, as behind a TLS-terminating proxy (the SDK allows
  // http only to this machine); cookie-authenticated writes then carry an
  // `http://` Origin the server accepts.
  const t = await startTestApp(dialect, { ...options, env: { TLS: 'off', TRUST_PROXY: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  return { t, baseUrl: `http://127.0.0.1:${port}`, close: () => t.close() };
}

export interface Member {
  client: CofferClient;
  id: string;
  email: string;
  keys: UserKeys;
  /** The e-mails delivered to this user (the server's `$DATA_DIR/outbox`, as there is no SMTP). */
  mailbox: () => Promise<{ text: string }[]>;
}

/**
 * Signs up through the SDK (cheap Argon2id, which the test server accepts),
 * without an invitation: the address stays unverified until an invitation is
 * accepted with the token from its e-mail (see `join`).
 */
export async function newUser(server: Server): Promise<Member> {
  const client = new CofferClient({ baseUrl: server.baseUrl });
  const email = `vault-${randomBytes(5).toString('hex')}@example.test`;
  const { user, keys } = await signUp(client, {
    email,
    name: email.split('@')[0]!,
    password: `pw-${randomBytes(8).toString('hex')}`,
    kdfCost: { ops_limit: 2, mem_limit_kib: 8192 },
  });
  const mailbox = async () =>
    (await outboxMails(server.t.config.dataDir)).filter((m) =>
      m.raw.split(/\r?\n/).includes(`To: ${email}`),
    );
  return { client, id: user.id, email, keys, mailbox };
}

/**
 * Invites `member` with `role` as `admin`, and accepts as the member does:
 * with the token of the invitation e-mail, which proves their address.
 */
export async function join(
  admin: Member,
  member: Member,
  projectId: string,
  role: 'admin' | 'developer' | 'viewer',
): Promise<string> {
  const invited = await admin.client.request<{ id: string }>(
    'POST',
    apiPath`/v1/projects/${projectId}/members`,
    { body: { email: member.email, role } },
  );
  const token = await eventually(
    async () => invitationTokenIn(await member.mailbox(), invited.id),
    `the invitation e-mail to ${member.email}`,
  );
  await acceptInvitation(member.client, invited.id, token);
  return invited.id;
}

export async function environmentIds(client: CofferClient, projectId: string) {
  const page = await client.requestPage<{ id: string; slug: string }>(
    'GET',
    apiPath`/v1/projects/${projectId}/environments`,
  );
  return Object.fromEntries(page.data.map((e) => [e.slug, e.id])) as Record<string, string>;
}

/** Encrypts with the session's environment key and writes the envelope. */
export async function writeSecret(
  vault: VaultSession,
  environmentId: string,
  name: string,
  value: string,
): Promise<void> {
  const { key, epoch } = await vault.environmentKey(vault.projectId, environmentId);
  const envelope = encryptSecretValue({
    environmentKey: key,
    projectId: vault.projectId,
    environmentId,
    name,
    epoch,
    value,
  });
  await vault.client.request(
    'PUT',
    apiPath`/v1/projects/${vault.projectId}/environments/${environmentId}/secrets/${name}`,
    { body: { value: envelope } },
  );
}

/** Reads the envelope and decrypts it with the session's environment key. */
export async function readSecret(
  vault: VaultSession,
  environmentId: string,
  name: string,
): Promise<string> {
  const secret = await vault.client.request<{ value: string }>(
    'GET',
    apiPath`/v1/projects/${vault.projectId}/environments/${environmentId}/secrets/${name}`,
  );
  return decryptWith(vault, environmentId, name, secret.value);
}

export async function decryptWith(
  vault: VaultSession,
  environmentId: string,
  name: string,
  envelope: string,
): Promise<string> {
  const { key, epoch } = await vault.environmentKey(environmentId);
  return decryptSecretValue({
    environmentKey: key,
    projectId: vault.projectId,
    environmentId,
    name,
    epoch,
    envelope,
  });
}

/** The fingerprint a member reads out to an admin (of their own keys): what a grant without an introduction needs. */
export const ownFingerprint = (member: Member): string =>
  fingerprint(member.keys.encryption.publicKey, member.keys.signing.publicKey);
