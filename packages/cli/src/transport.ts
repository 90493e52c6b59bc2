import { readFileSync } from 'node:fs';
import { CliError } from './cli/errors.js';

/**
 * The `fetch` the SDK client uses. Without a CA file it is Node's own fetch;
 * with one (`--ca`, `COFFER_CA_FILE`: the embedded default's self-signed
 * certificate) it is undici's fetch over an Agent that trusts exactly that
 * certificate, like `curl --cacert`. undici is imported only then: it is the
 * largest module the CLI loads.
 */
export async function transportFetch(caFile: string | null): Promise<typeof fetch> {
  if (caFile === null) return globalThis.fetch;
  let ca: string;
  try {
    ca = readFileSync(caFile, 'utf8');
  } catch (err) {
    throw new CliError(
      'ca_file_unreadable',
      `cannot read the CA file ${caFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
    throw new CliError('ca_file_invalid', `${caFile} is not a PEM certificate`);
  }
  const { Agent, fetch: undiciFetch } = await import('undici');
  const dispatcher = new Agent({ connect: { ca } });
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(
      input as never,
      { ...(init as object), dispatcher } as never,
    )) as unknown as typeof fetch;
}
