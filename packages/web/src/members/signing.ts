import { isVaultError, type ChainMember, type VaultSession } from '@coffer/sdk';
import { keyring } from '../lib/keyring';

/** Whether a change of who is a member was signed into the project's membership chain, and if not, why. */
export type Signing =
  | { kind: 'signed' }
  | { kind: 'outside' }
  | { kind: 'unchained' }
  | { kind: 'no_key' }
  | { kind: 'failed'; error: unknown };

/**
 * Makes a membership change an admin's client signs (`changeMemberRole`,
 * `removeMemberSigned`) with the unlocked vault session. An admin who holds no
 * project key yet vouches for nobody: the plain server call, said unsigned.
 * The SDK changes the server first and signs after, so a refusal to sign
 * (`not_chain_admin`, a chain refusal) comes after the change: reported with it.
 */

export async function signed(
  projectId: string,
  userId: string,
  change: (vault: VaultSession) => Promise<unknown>,
  plain: () => Promise<unknown>,
  done: (chained: ChainMember | undefined) => boolean,
): Promise<Signing> {
  const vault = await keyring.vault(projectId);
  if (!vault.holdsKeys) {
    await plain();
    return { kind: 'no_key' };
  }
  const before = vault.chain?.members.get(userId);
  try {
    await change(vault);
  } catch (error) {
    if (!isVaultError(error)) throw error;
    return { kind: 'failed', error };
  }
  const chain = vault.chain;
  if (!chain) return { kind: 'unchained' };
  const after = chain.members.get(userId);
  if (!before && !after) return { kind: 'outside' };
  return done(after) ? { kind: 'signed' } : { kind: 'failed', error: null };
}
