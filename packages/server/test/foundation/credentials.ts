import { generateBearer, ready, TOKEN_PREFIXES } from '@coffer/sdk';
import { hashToken } from '../../src/domains/identity/credentials.js';
import { newId } from '../../src/ids.js';
import type { TestApp } from '../support/app.js';

/**
 * API keys / CI tokens written straight into their tables (bearer from the SDK,
 * stored hashed, exactly as the resolver reads them): the rate-limit tests need
 * each credential kind, not the token domain's issuing rules, which its own
 * tests cover.
 */
export async function insertBearer(
  t: TestApp,
  kind: 'api_key' | 'ci_token',
  projectId: string,
  userId: string,
): Promise<string> {
  await ready();
  const bearer = generateBearer(kind === 'api_key' ? TOKEN_PREFIXES.apiKey : TOKEN_PREFIXES.ci);
  const now = t.clock.now();
  const row = {
    project_id: projectId,
    name: kind,
    token_hash: hashToken(bearer),
    scopes: '{}',
    public_key: 'test-public-key',
    created_by: userId,
    created_at: now.toISOString(),
  };
  const db = t.testDb.db.kysely;
  if (kind === 'api_key') {
    await db
      .insertInto('api_keys')
      .values({ ...row, id: newId('apiKey'), role: 'viewer', expires_at: null })
      .execute();
  } else {
    const expires = new Date(now.getTime() + 3600_000).toISOString();
    await db
      .insertInto('ci_tokens')
      .values({ ...row, id: newId('ciToken'), expires_at: expires })
      .execute();
  }
  return bearer;
}
