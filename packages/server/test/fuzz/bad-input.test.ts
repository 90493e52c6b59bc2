import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIALECTS, POSTGRES_URL } from '../support/db.js';
import { serviceMissing } from '../foundation/server-process.js';
import { runCampaign, summarize, type CampaignDialect } from './campaign.js';

// The generated bad-input campaign against a real server process (see
// campaign.ts). `npm test` samples FUZZ_PER_COMBINATION (default 3) of the
// malformed requests generated for each operation and caller; `npm run fuzz`
// sends every one of them.

const perCombination = Number(process.env.FUZZ_PER_COMBINATION ?? 3);

// The two dialects run side by side (each is mostly waiting on its own server).
describe(
  'bad input to every operation, from every kind of caller (real process)',
  { concurrency: true },
  () => {
    for (const dialect of DIALECTS as CampaignDialect[]) {
      it(`answers each malformed request with a Form A refusal, rate-limit headers and no change (${dialect})`, async (t) => {
        if (dialect === 'postgres' && !POSTGRES_URL) {
          serviceMissing(t, 'A real PostgreSQL server (COFFER_TEST_DATABASE_URL)');
          return;
        }
        const result = await runCampaign({
          dialect,
          ...(POSTGRES_URL ? { postgresUrl: POSTGRES_URL } : {}),
          ...(perCombination > 0 ? { perCombination } : {}),
        });
        for (const line of summarize(result, dialect)) t.diagnostic(line);
        assert.deepEqual(result.failures, []);
        assert.ok(
          result.minimumPerCombination >= 30,
          'at least 30 generated per operation and caller',
        );
        assert.ok(result.operations >= 40, `${result.operations} operations in the document`);
      });
    }
  },
);
