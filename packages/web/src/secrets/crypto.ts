import {
  decryptSecretValue,
  encryptSecretValue,
  isStaleEpoch,
  parseEnvelope,
  ready,
  type VaultSession,
} from '@coffer/sdk';
import { keyring } from '../lib/keyring';

/** Decrypts one envelope; a newer epoch than the session's means a re-key happened: refresh once. */
export async function decryptEnvelope(
  projectId: string,
  environmentId: string,
  name: string,
  envelope: string,
): Promise<string> {
  await ready();
  const vault = await keyring.vault(projectId);
  let { key, epoch } = await vault.environmentKey(environmentId);
  if (parseEnvelope(envelope).epoch !== epoch) {
    await vault.refresh();
    ({ key, epoch } = await vault.environmentKey(environmentId));
  }
  return decryptSecretValue({
    environmentKey: key,
    projectId,
    environmentId,
    name,
    epoch,
    envelope,
  });
}

/** Encrypts for an environment at the vault's current epoch (values are bound to project, environment and name). */
export async function encryptFor(
  vault: VaultSession,
  environmentId: string,
  name: string,
  value: string,
): Promise<string> {
  const { key, epoch } = await vault.environmentKey(environmentId);
  return encryptSecretValue({
    environmentKey: key,
    projectId: vault.projectId,
    environmentId,
    name,
    epoch,
    value,
  });
}

/** Runs a write; after a `stale_epoch` conflict (a re-key moved the vault on) refreshes the keys and tries once more. */
export async function withCurrentEpoch<T>(
  projectId: string,
  write: (vault: VaultSession) => Promise<T>,
): Promise<T> {
  await ready();
  const vault = await keyring.vault(projectId);
  try {
    return await write(vault);
  } catch (error) {
    if (!isStaleEpoch(error)) throw error;
    await vault.refresh();
    return write(vault);
  }
}
