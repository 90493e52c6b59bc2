import type { Migration, MigrationProvider } from 'kysely';
import * as initial from './2026-11-22-001-initial.js';
import * as serverSettings from './2026-11-22-002-server-settings.js';
import * as tokenSigningKeys from './2026-11-22-004-token-signing-keys.js';
import * as auditChain from './2026-12-01-005-audit-chain.js';
import * as keyTrust from './2026-12-10-010-key-trust.js';
import * as auditChainFunction from './2026-12-11-011-audit-chain-function.js';
import * as membershipChain from './2026-12-12-012-membership-chain.js';
import * as webhooks from './2026-12-20-013-webhooks.js';
import * as personalOverrides from './2026-12-21-014-personal-overrides.js';
import * as idempotencyKeys from './2026-12-22-015-idempotency-keys.js';
import * as idempotencyKeysSqlite from './2026-12-23-016-idempotency-keys-sqlite.js';
import * as idempotencyKeysCompact from './2026-12-24-017-idempotency-keys-compact.js';

// Numbers 003 and 006-009 are missing: no migration with them exists in this
// repository's history. Gaps are never closed up: a migration's name is the key
// Kysely records in `kysely_migration` on every installed database, so renaming a
// shipped (frozen) migration would make it run again there. Kysely orders by
// name, so a gap is harmless; a new migration takes the number after the last.

/** Every migration, in order. Add new ones at the end; never edit a shipped one. */
const MIGRATIONS: Record<string, Migration> = {
  '2026-11-22-001-initial': initial,
  '2026-11-22-002-server-settings': serverSettings,
  '2026-11-22-004-token-signing-keys': tokenSigningKeys,
  '2026-12-01-005-audit-chain': auditChain,
  '2026-12-10-010-key-trust': keyTrust,
  '2026-12-11-011-audit-chain-function': auditChainFunction,
  '2026-12-12-012-membership-chain': membershipChain,
  '2026-12-20-013-webhooks': webhooks,
  '2026-12-21-014-personal-overrides': personalOverrides,
  '2026-12-22-015-idempotency-keys': idempotencyKeys,
  '2026-12-23-016-idempotency-keys-sqlite': idempotencyKeysSqlite,
  '2026-12-24-017-idempotency-keys-compact': idempotencyKeysCompact,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
