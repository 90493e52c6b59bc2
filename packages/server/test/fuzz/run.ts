// `npm run fuzz`: the whole bad-input campaign (every generated request) on
// SQLite, and on PostgreSQL when COFFER_TEST_DATABASE_URL is set. Prints the
// totals; exits 1 if any answer broke the rules. FUZZ_ONLY (a regular
// expression) keeps the malformed requests whose label matches, e.g.
// FUZZ_ONLY='Host|2\^' for the missing-Host and out-of-range-integer ones.
import { runCampaign, summarize, type CampaignDialect } from './campaign.js';

const postgresUrl = process.env.COFFER_TEST_DATABASE_URL || undefined;
const dialects: CampaignDialect[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite'];
let failed = false;
for (const dialect of dialects) {
  const started = Date.now();
  const result = await runCampaign({
    dialect,
    ...(postgresUrl ? { postgresUrl } : {}),
    ...(Number(process.env.FUZZ_PER_COMBINATION) > 0
      ? { perCombination: Number(process.env.FUZZ_PER_COMBINATION) }
      : {}),
    ...(process.env.FUZZ_ONLY ? { only: new RegExp(process.env.FUZZ_ONLY) } : {}),
    log: (line) => process.stderr.write(`  ${line}\n`),
  });
  for (const line of summarize(result, dialect)) console.log(line);
  console.log(`  ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const failure of result.failures.slice(0, 50)) console.log(`  FAIL ${failure}`);
  if (result.failures.length > 0) failed = true;
}
process.exit(failed ? 1 : 0);
