import { createHmac, hkdfSync } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { CliError } from '../cli/errors.js';

/**
 * The known-findings baseline: a JSON file of keyed hashes, one per accepted
 * finding, of (secret id, location). The key of each environment is derived
 * with HKDF-SHA256 from that environment's key, which both the team's members
 * (through the project key) and a token scoped to the environment hold, so a
 * laptop and CI compute the same hashes. Without the key the file reveals
 * nothing: not which secrets leaked, not where, not whether two entries are
 * the same secret. A re-key changes the environment keys: after one, run
 * `--update-baseline` again.
 */

const FORMAT = 'coffer-scan-baseline';
const VERSION = 1;

export function baselineKey(environmentKey: Uint8Array, projectId: string, envId: string): Buffer {
  return Buffer.from(
    hkdfSync(
      'sha256',
      environmentKey,
      Buffer.alloc(0),
      `coffer scan baseline v1\0${projectId}\0${envId}`,
      32,
    ),
  );
}

/** What a finding's location is made of: the commit too in history scans. */
export interface Location {
  path: string;
  line: number;
  column: number;
  commit?: string | null;
}

export function findingHash(key: Buffer, secretId: string, at: Location): string {
  const location = [at.commit ?? '', at.path, at.line, at.column].join('\0');
  return createHmac('sha256', key).update(`${secretId}\0${location}`).digest('hex');
}

export function readBaseline(file: string): Set<string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Set();
    throw new CliError('baseline_unreadable', `cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError('invalid_baseline', `${file} is not JSON`);
  }
  const body = parsed as { format?: unknown; version?: unknown; findings?: unknown };
  if (
    body?.format !== FORMAT ||
    body.version !== VERSION ||
    !Array.isArray(body.findings) ||
    !body.findings.every((f) => typeof f === 'string' && /^[0-9a-f]{64}$/.test(f))
  ) {
    throw new CliError(
      'invalid_baseline',
      `${file} is not a coffer scan baseline (version ${VERSION})`,
    );
  }
  return new Set(body.findings as string[]);
}

/** Writes the baseline whole (a temporary file renamed over it): never half-written. */
export function writeBaseline(file: string, hashes: Iterable<string>): void {
  const body = {
    format: FORMAT,
    version: VERSION,
    about:
      'Accepted findings of `coffer scan`: HMAC-SHA256 of (secret id, location) under a key derived from each environment key. Reveals no value, name or path.',
    findings: [...new Set(hashes)].sort(),
  };
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o644 });
  renameSync(temporary, file);
}
