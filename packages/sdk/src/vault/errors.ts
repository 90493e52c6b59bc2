/**
 * Why a vault operation cannot proceed, as stable codes the CLI and dashboard
 * can switch on. API refusals stay `CofferApiError`s and crypto failures
 * `CryptoError`s; these are the vault's own rules.
 */
export type VaultErrorCode =
  /** The project's vault has no key yet (epoch 0): create it with `initializeVault`. */
  | 'not_initialized'
  | 'already_initialized'
  /** The caller holds no grant for the current epoch (a viewer, or a member not granted yet). */
  | 'no_grant'
  /** A token asked for an environment outside its scopes. */
  | 'out_of_scope'
  /** The operation needs the project key, which only members hold. */
  | 'not_a_member'
  /** `trustGranter` refused the key that signed a grant. */
  | 'untrusted_granter'
  /** The member's key fingerprint is not the one the caller confirmed. */
  | 'fingerprint_mismatch'
  /** The member is not waiting for a grant (already granted, a viewer, or not an active member). */
  | 'not_pending'
  /** The keys the server shows for a member do not match the introduction they accepted (or it does not open). */
  | 'introduction_mismatch'
  /** The member joined without a verified introduction: compare fingerprints and pass `expectedFingerprint`. */
  | 'unverified_member'
  /** The server shows a key for a user that differs from the one pinned (accepted earlier). */
  | 'key_changed'
  /** The server returned key pins older than the highest version this client has seen. */
  | 'pins_rollback'
  /** The project's membership chain does not verify (a forged or altered statement). */
  | 'chain_invalid'
  /** The server shows a project with a membership chain whose root differs from the pinned one. */
  | 'chain_changed'
  /** The server shows a chain that lacks a statement this client has seen, or none where one was pinned. */
  | 'chain_rollback'
  /** The caller must sign membership statements but is not an admin in the project's chain. */
  | 'not_chain_admin'
  /** The project has a membership chain already (signMembershipChain). */
  | 'already_chained'
  | 'unknown_environment';

export class VaultError extends Error {
  readonly code: VaultErrorCode;

  constructor(code: VaultErrorCode, message: string) {
    super(message);
    this.name = 'VaultError';
    this.code = code;
  }
}

/** `instanceof` fails across duplicated bundles; this checks the shape too. */
export function isVaultError(error: unknown, code?: VaultErrorCode): error is VaultError {
  if (!(error instanceof Error) || error.name !== 'VaultError') return false;
  const actual = (error as { code?: unknown }).code;
  return typeof actual === 'string' && (code === undefined || actual === code);
}
