import { generateBearer } from '@coffer/sdk';
import { hashToken } from '../../src/domains/identity/credentials.js';
import { newId } from '../../src/ids.js';
import type { TestApp } from '../support/app.js';

// Rows the identity tests need from other domains, written straight to the
// database so these tests exercise only identity code.

/** A bare project row (no members, no vault). */
export async function insertProject(t: TestApp, createdBy: string): Promise<string> {
  const id = newId('project');
  const now = t.clock.now().toISOString();
  await t.testDb.db.kysely
    .insertInto('projects')
    .values({
      id,
      name: 'Identity test project',
      description: '',
      created_by: createdBy,
      created_at: now,
      updated_at: now,
      vault_epoch: 0,
      rekey_recommended: 0,
    })
    .execute();
  return id;
}

/** An API key row as the projects domain stores it; returns its id and bearer. */
export async function insertApiKey(
  t: TestApp,
  projectId: string,
  createdBy: string,
  expiresInMs: number | null = null,
): Promise<{ id: string; bearer: string }> {
  const bearer = generateBearer('cek_');
  const id = newId('apiKey');
  const now = t.clock.now();
  await t.testDb.db.kysely
    .insertInto('api_keys')
    .values({
      id,
      project_id: projectId,
      name: 'key',
      token_hash: hashToken(bearer),
      role: 'viewer',
      scopes: '{}',
      public_key: 'unused',
      created_by: createdBy,
      created_at: now.toISOString(),
      expires_at: expiresInMs === null ? null : new Date(now.getTime() + expiresInMs).toISOString(),
      last_used_at: null,
      revoked_at: null,
    })
    .execute();
  return { id, bearer };
}
