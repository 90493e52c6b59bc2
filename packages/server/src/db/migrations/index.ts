import type { Migration, MigrationProvider } from 'kysely';
import * as initial from './2026-11-22-001-initial.js';

/** Every migration, in order. Add new ones at the end; never edit a shipped one. */
const MIGRATIONS: Record<string, Migration> = {
  '2026-11-22-001-initial': initial,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
