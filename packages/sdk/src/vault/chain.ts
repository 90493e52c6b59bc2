import {
  CryptoError,
  ready,
  verifyMembershipChain,
  type MembershipState,
  type MembershipStatement,
} from '../crypto/index.js';
import type { CofferClient } from '../client/http.js';
import { getMembershipChain } from '../client/membership-chain.js';
import { VaultError } from './errors.js';
import type { KeyPins } from './key-pins.js';

// Checking the signed membership chain a server serves: against the pinned
// root, or the root a token's credential names (CRYPTO.md, "Membership
// chain"). Opening a vault checks it; signing statements (membership.ts)
// starts from it.

export interface ChainCheckOptions {
  /** The user's pins: the chain's root is pinned at first sight and must not change or roll back. */
  pins?: KeyPins;
  /** The root (link hash, base64url) the chain must start with: a token's credential names it. */
  root?: string | null;
}

/**
 * Verifies a project's chain as the server served it. `null` when the project
 * has none yet (and nothing pinned or bound says it should): such a project is
 * accepted with a warning until an admin signs one (`signMembershipChain`).
 * Throws `chain_invalid`, `chain_changed` (another root than the pinned or
 * bound one) or `chain_rollback`.
 */
export function checkMembershipChain(
  statements: MembershipStatement[],
  projectId: string,
  options: ChainCheckOptions = {},
): MembershipState | null {
  if (statements.length === 0) {
    if (options.root || options.pins?.project(projectId)) {
      throw new VaultError(
        'chain_rollback',
        `The server shows no membership chain for project ${projectId}, but ${options.root ? 'this credential names one' : 'you have seen one'}: refusing (the server may be hiding who is a member)`,
      );
    }
    return null;
  }
  let state: MembershipState;
  try {
    state = verifyMembershipChain(statements, projectId);
  } catch (error) {
    if (error instanceof CryptoError) {
      throw new VaultError(
        'chain_invalid',
        `The membership chain of project ${projectId} does not verify (${error.message}): refusing (someone may be forging members)`,
      );
    }
    throw error;
  }
  if (options.root && options.root !== state.root) {
    throw new VaultError(
      'chain_changed',
      `The server shows project ${projectId} with a membership chain other than the one this credential names (fingerprint ${state.fingerprint}): refusing`,
    );
  }
  options.pins?.acceptChain(state);
  return state;
}

/**
 * Fetches and checks a project's chain (`checkMembershipChain`) and saves the
 * pins when the check moved them (a root pinned at first sight, a head that grew).
 */
export async function loadMembershipChain(
  client: CofferClient,
  projectId: string,
  options: ChainCheckOptions = {},
): Promise<MembershipState | null> {
  await ready();
  const { statements } = await getMembershipChain(client, projectId);
  const state = checkMembershipChain(statements, projectId, options);
  if (options.pins?.dirty) await options.pins.save();
  return state;
}
