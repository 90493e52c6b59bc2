import type { Migration, MigrationProvider } from 'kysely';
import * as initial from './2026-11-22-001-initial.js';
import * as serverSettings from './2026-11-22-002-server-settings.js';

/** Every migration, in order. Add new ones at the end; never edit a shipped one. */
const MIGRATIONS: Record<string, Migration> = {
  '2026-11-22-001-initial': initial,
  '2026-11-22-002-server-settings': serverSettings,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
