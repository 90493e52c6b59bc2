// Secrets as text: a `.env` or JSON text imported in one batch, and an
// environment exported as `.env`, JSON, YAML, shell or a CI format. Apart from
// client/secrets.ts so that a program that only reads and writes values (the
// dashboard's first visit) does not carry the parsers and formatters.
import {
  formatDotenv,
  formatGithubEnv,
  formatGithubMasks,
  formatJson,
  formatKubernetesSecret,
  formatShell,
  formatYaml,
  type DotenvOptions,
  parseDotenv,
  parseJsonSecrets,
} from '../dotenv.js';
import { environmentIdOf } from './environments.js';
import {
  batchSecretEnvelopes,
  encrypt,
  listSecrets,
  MAX_BATCH_ITEMS,
  SecretsError,
  withCurrentKey,
  type ReadOptions,
  type SecretScope,
} from './secrets.js';

/**
 * `github`: the `$GITHUB_ENV` file format; `github-masks`: the `::add-mask::`
 * commands that hide those values in the job's log; `k8s`: a Kubernetes
 * `Secret` manifest (needs `options.name`).
 */
export type ExportFormat = 'dotenv' | 'json' | 'yaml' | 'shell' | 'github' | 'github-masks' | 'k8s';

export interface ExportOptions extends DotenvOptions, ReadOptions {
  /** `k8s`: the Secret's `metadata.name` (a DNS-1123 subdomain). */
  name?: string;
  /** `k8s`: the Secret's `metadata.namespace` (a DNS-1123 label). */
  namespace?: string;
}
export type ImportFormat = 'dotenv' | 'json';

/**
 * Imports a `.env` or JSON text in ONE batch request: every secret is written
 * (new versions for existing names) or none is. At most 1,000 secrets. Returns
 * the names created and updated.
 */
export async function importSecrets(
  scope: SecretScope,
  env: string,
  text: string,
  format: ImportFormat,
): Promise<{ created: string[]; updated: string[] }> {
  const entries = format === 'dotenv' ? parseDotenv(text) : parseJsonSecrets(text);
  if (entries.length > MAX_BATCH_ITEMS) {
    throw new SecretsError(
      'too_many',
      `${entries.length} secrets: one import holds at most ${MAX_BATCH_ITEMS}`,
    );
  }
  if (entries.length === 0) return { created: [], updated: [] };
  const environmentId = await environmentIdOf(scope.client, scope.projectId, env);
  const result = await withCurrentKey(scope, environmentId, (key) =>
    batchSecretEnvelopes(scope.client, scope.projectId, environmentId, {
      secrets: entries.map((e) => ({
        name: e.name,
        value: encrypt(scope, environmentId, e.name, e.value, key),
      })),
    }),
  );
  return {
    created: result.secrets.filter((s) => s.version === 1).map((s) => s.name),
    updated: result.secrets.filter((s) => s.version > 1).map((s) => s.name),
  };
}

/**
 * Every secret of the environment, decrypted and serialized (`.env`, JSON, YAML,
 * shell `export` lines, GitHub Actions' `$GITHUB_ENV` or its masks, or a
 * Kubernetes Secret). `.env` is written for `options.dialect` (default: npm
 * dotenv and python-dotenv both); a value a format cannot carry exactly throws
 * an `UnwritableValueError` naming the secret.
 */
export async function exportSecrets(
  scope: SecretScope,
  env: string,
  format: ExportFormat,
  options: ExportOptions = {},
): Promise<string> {
  if (format === 'k8s' && options.name === undefined)
    throw new TypeError('a Kubernetes Secret needs options.name');
  const secrets = await listSecrets(scope, env, options);
  return formatSecrets(secrets, format, options);
}

/** Serializes decrypted secrets in one of the export formats (see `exportSecrets`). */
export function formatSecrets(
  secrets: Readonly<Record<string, string>>,
  format: ExportFormat,
  options: ExportOptions = {},
): string {
  switch (format) {
    case 'github':
      return formatGithubEnv(secrets);
    case 'github-masks':
      return formatGithubMasks(secrets);
    case 'k8s':
      if (options.name === undefined) throw new TypeError('a Kubernetes Secret needs options.name');
      return formatKubernetesSecret(secrets, {
        name: options.name,
        ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
      });
    case 'dotenv':
      return formatDotenv(secrets, options);
    case 'json':
      return formatJson(secrets);
    case 'yaml':
      return formatYaml(secrets);
    case 'shell':
      return formatShell(secrets);
  }
}
