import {
  decodeKeyPart,
  openVault,
  parseCredential,
  ready,
  tokenKeysFromKeyPart,
  type CofferClient,
  type VaultKeys,
  type VaultSession,
} from '@coffer/sdk';
import { CliError } from './cli/errors.js';
import { note } from './cli/output.js';
import type { Context } from './context.js';

/** Checks COFFER_TOKEN's shape and splits it; a clear error instead of a 401 later. */
export async function tokenParts(ctx: Context): Promise<{
  bearer: string;
  keyPart: string;
  creatorSigningPublicKey: string | null;
  chainRoot: string | null;
}> {
  await ready();
  try {
    return parseCredential(ctx.token!);
  } catch {
    throw new CliError(
      'invalid_credential',
      'COFFER_TOKEN is not a Coffer credential: expected the full <bearer>.<key part> printed when the token was created',
    );
  }
}

/** The caller's key pairs: the user's (session file) or the token's (derived from its key part). */
async function vaultKeys(ctx: Context): Promise<VaultKeys> {
  if (!ctx.token) return ctx.userKeys();
  const keys = tokenKeysFromKeyPart((await tokenParts(ctx)).keyPart);
  return { encryption: keys.encryption, signing: keys.signing };
}

/**
 * The secret only this caller holds, for keys the CLI derives locally (the
 * fallback copy): the user's X25519 secret key, or the token's key part.
 */
export async function privateKeyMaterial(ctx: Context): Promise<Uint8Array> {
  if (!ctx.token) return ctx.userKeys().encryption.secretKey;
  const { keyPart, creatorSigningPublicKey } = await tokenParts(ctx);
  // Version 1: the key part is the seed itself; versions 2 and 3: just its seed.
  if (creatorSigningPublicKey === null) return new Uint8Array(Buffer.from(keyPart, 'base64url'));
  return decodeKeyPart(keyPart).seed;
}

/** Projects whose missing membership chain this process has already warned about. */
const warnedUnchained = new Set<string>();

/**
 * Warns once (stderr, never stdout: `coffer run` and exports stay clean) that
 * a project has no signed membership chain yet, so who holds its key rests on
 * what the server says until an admin signs one.
 */
function warnIfUnchained(session: VaultSession): void {
  if (!session.unchained || warnedUnchained.has(session.projectId)) return;
  warnedUnchained.add(session.projectId);
  note(
    `coffer: warning: project ${session.projectId} has no signed membership chain yet, so its members' keys are taken as the server shows them; an admin who holds the vault key can sign one with \`coffer vault chain sign\`.`,
  );
}

/**
 * Opens the vault. A user's grants are checked against their key pins (loaded
 * alongside): a granter whose keys differ from the pinned ones is refused
 * (`key_changed`), a new one pinned on first use, and only a granter the
 * project's signed membership chain made admin is accepted
 * (`untrusted_granter`); a project without a chain is accepted with a warning
 * on stderr (`quietUnchained`: not here, e.g. for `vault chain sign` itself).
 * Tokens have no pins; a version 2 token credential accepts only grants signed
 * by its creator's key, a version 3 one also those of admins of the membership
 * chain it names.
 */
export async function openProjectVault(
  ctx: Context,
  client: CofferClient,
  projectId: string,
  options: { quietUnchained?: boolean } = {},
): Promise<VaultSession> {
  const keys = await vaultKeys(ctx);
  if (ctx.token) {
    // A version 2 credential names its creator's signing key: grants signed by
    // another key are refused (untrusted_granter). Version 3 names the chain's
    // root too: the chain must start there, and its admins' grants are accepted.
    const { creatorSigningPublicKey, chainRoot } = await tokenParts(ctx);
    return openVault(client, projectId, keys, {
      granterSigningPublicKey: creatorSigningPublicKey,
      chainRoot,
    });
  }
  const pins = ctx.keyPins(client);
  pins.catch(() => undefined); // awaited by openVault; never an unhandled rejection
  const session = await openVault(client, projectId, keys, { pins });
  if (!options.quietUnchained) warnIfUnchained(session);
  return session;
}
