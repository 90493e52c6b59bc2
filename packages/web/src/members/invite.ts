import { inviteMember, isVaultError, type Role } from '@coffer/sdk';
import { inviteWithIntroduction } from '@coffer/sdk/vault/introduction';
import { client } from '../lib/client';
import { keyring } from '../lib/keyring';

/** The roles a member can have, as the invite form and the role picker offer them. */
export const ROLES: Role[] = ['admin', 'developer', 'viewer'];

export async function inviteWith(projectId: string, input: { email: string; role: Role }) {
  const vault = await keyring.vault(projectId);
  try {
    const introduced = await inviteWithIntroduction(vault, input.email, input.role, {
      publicUrl: window.location.origin,
    });
    return { member: introduced.member, link: introduced.introductionLink };
  } catch (error) {
    if (!isVaultError(error, 'no_grant')) throw error;
    return { member: await inviteMember(client, projectId, input), link: null };
  }
}
