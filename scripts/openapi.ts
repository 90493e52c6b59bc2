// Writes the OpenAPI document the server serves at /v1/openapi.json, built in
// process (no listening socket, a throwaway SQLite file), and lints it with
// Redocly's recommended rules: `npm run check` fails on any error.
//
//   node --import tsx --conditions=development scripts/openapi.ts            # lint
//   node --import tsx --conditions=development scripts/openapi.ts --out=FILE # write only
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../packages/server/src/app.js';
import { loadConfig } from '../packages/server/src/config.js';
import { openDatabase } from '../packages/server/src/db/database.js';

/** The served document, exactly as GET /v1/openapi.json answers it. */
export async function servedOpenApiDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-openapi-'));
  try {
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', DASHBOARD: 'off' });
    const db = await openDatabase({ kind: 'sqlite', file: join(dir, 'coffer.db') });
    const app = await buildApp({ config, db });
    try {
      await app.ready();
      const response = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
      if (response.statusCode !== 200) {
        throw new Error(`GET /v1/openapi.json answered ${response.statusCode}: ${response.body}`);
      }
      return response.json() as Record<string, unknown>;
    } finally {
      await app.close();
      await db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const out = process.argv.find((a) => a.startsWith('--out='))?.slice('--out='.length);
  const document = await servedOpenApiDocument();
  if (out) {
    writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'coffer-openapi-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    // Indented, so the line numbers Redocly reports point somewhere readable.
    writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
    const redocly = new URL('../node_modules/@redocly/cli/bin/cli.js', import.meta.url).pathname;
    // Redocly exits non-zero on errors only; warnings are printed and pass.
    const result = spawnSync(process.execPath, [redocly, 'lint', '--extends=recommended', file], {
      stdio: 'inherit',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    process.exitCode = result.status ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
