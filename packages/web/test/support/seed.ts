// Accounts, projects and values written through the SDK in Node (as the CLI
// would), so a browser test starts from a realistic project without clicking
// through sign-up again. Argon2id at the SDK's default cost, like the dashboard.
import {
  createProjectWithVault,
  openVault,
  setSecret,
  signUp as sdkSignUp,
  type UserKeys,
} from '@coffer/sdk';
import type { Coffer } from './browser.js';
import { newAccount, type Account } from './flows.js';

export interface Seeded extends Account {
  id: string;
  keys: UserKeys;
  client: Awaited<ReturnType<Coffer['client']>>;
}

export async function seedAccount(
  coffer: Coffer,
  prefix: string,
  invitationToken?: string,
  email?: string,
): Promise<Seeded> {
  const account = { ...newAccount(prefix), ...(email ? { email } : {}) };
  const client = await coffer.client();
  const { user, keys } = await sdkSignUp(client, {
    email: account.email,
    name: account.name,
    password: account.password,
    ...(invitationToken ? { invitationToken } : {}),
  });
  return { ...account, id: user.id, keys, client };
}

/** A project with values per environment slug: `{ staging: { NAME: value } }`. */
export async function seedProject(
  owner: Seeded,
  name: string,
  values: Record<string, Record<string, string>>,
): Promise<string> {
  const project = await createProjectWithVault(owner.client, owner.keys, { name });
  const vault = await openVault(owner.client, project.id, owner.keys);
  try {
    for (const [environment, secrets] of Object.entries(values))
      for (const [key, value] of Object.entries(secrets))
        await setSecret(
          { client: owner.client, projectId: project.id, keys: vault },
          environment,
          key,
          value,
        );
  } finally {
    vault.forget();
  }
  return project.id;
}
