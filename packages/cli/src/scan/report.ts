import type { Encoding } from './encodings.js';
import type { NotScanned } from './values.js';

/** One leak, as every output format describes it: never the value, nor any part of it. */
export interface Finding {
  path: string;
  line: number;
  column: number;
  secretId: string;
  name: string;
  environment: string;
  encoding: Encoding;
  /** History scans: the commit that first brought the leak in, and its author date. */
  commit?: string | null;
  authorDate?: string | null;
  /** The keyed hash the baseline holds for this finding. */
  fingerprint: string;
}

export interface ScanSummary {
  mode: 'files' | 'git' | 'stdin' | 'staged';
  /** Files, blobs or streams scanned. */
  scanned: number;
  bytes: number;
  skippedBinary: number;
  secrets: number;
  patterns: number;
  /** Seconds spent reading and matching (after the values were fetched and decrypted). */
  seconds: number;
  /** This process's CPU time in those seconds (git's own processes not included). */
  cpuSeconds: number;
  baselined: number;
  /**
   * `--staged` only: `used` when the keyed-hash cache answered (no value was
   * fetched), `written` when the values were fetched and the cache written.
   */
  cache?: 'used' | 'written';
}

export function textReport(findings: Finding[]): string {
  return findings
    .map((f) => {
      const where = `${f.path}:${f.line}:${f.column}`;
      const origin =
        f.commit !== undefined
          ? f.commit
            ? `  first in ${f.commit.slice(0, 12)} (${f.authorDate})`
            : '  (no commit adds this blob)'
          : '';
      return `${where}  ${f.name} (${f.environment}) [${f.encoding}]${origin}\n`;
    })
    .join('');
}

/** A line for stderr: the values left out, by name, once. */
export function notScannedNote(notScanned: NotScanned[]): string | null {
  if (notScanned.length === 0) return null;
  const names = notScanned.map((n) => `${n.name} (${n.environment}): ${n.reason}`);
  return `coffer scan: not scanned (too short or too common to tell from ordinary text): ${names.join(', ')}`;
}

export function jsonReport(findings: Finding[], notScanned: NotScanned[], summary: ScanSummary) {
  return {
    findings: findings.map((f) => ({
      path: f.path,
      line: f.line,
      column: f.column,
      secret: { id: f.secretId, name: f.name, environment: f.environment },
      encoding: f.encoding,
      ...(f.commit !== undefined ? { commit: f.commit, author_date: f.authorDate } : {}),
      fingerprint: f.fingerprint,
    })),
    not_scanned: notScanned,
    summary: {
      mode: summary.mode,
      scanned: summary.scanned,
      bytes: summary.bytes,
      skipped_binary: summary.skippedBinary,
      secrets: summary.secrets,
      patterns: summary.patterns,
      seconds: Number(summary.seconds.toFixed(3)),
      cpu_seconds: Number(summary.cpuSeconds.toFixed(3)),
      baselined: summary.baselined,
      ...(summary.cache ? { cache: summary.cache } : {}),
    },
  };
}

const RULE_ID = 'coffer/leaked-secret';

/** SARIF 2.1.0, as GitHub code scanning takes it (`github/codeql-action/upload-sarif`). */
export function sarifReport(findings: Finding[], notScanned: NotScanned[], version: string) {
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'coffer scan',
            version,
            rules: [
              {
                id: RULE_ID,
                name: 'LeakedSecret',
                shortDescription: { text: 'A secret value of the team is in this file' },
                fullDescription: {
                  text: 'coffer scan found the exact value of a secret stored in Coffer (as it is or encoded). Rotate the secret, then remove it from the file and its history.',
                },
                help: {
                  text: 'Rotate the secret in Coffer (coffer secrets set NAME), remove it from the file, and if it was committed, treat every clone and build log as holding it.',
                },
                defaultConfiguration: { level: 'error' },
                properties: { tags: ['security', 'secret'], 'security-severity': '9.0' },
              },
            ],
          },
        },
        columnKind: 'unicodeCodePoints',
        results: findings.map((f) => ({
          ruleId: RULE_ID,
          ruleIndex: 0,
          level: 'error',
          message: {
            text: `${f.name} (${f.environment}) leaked [${f.encoding}]${f.commit ? `, first in commit ${f.commit}` : ''}`,
          },
          locations: [
            {
              physicalLocation: {
                artifactLocation: {
                  uri: f.path.split('/').map(encodeURIComponent).join('/'),
                  uriBaseId: '%SRCROOT%',
                },
                region: { startLine: f.line, startColumn: f.column },
              },
            },
          ],
          partialFingerprints: { 'cofferFinding/v1': f.fingerprint },
          properties: {
            secret: f.name,
            environment: f.environment,
            encoding: f.encoding,
            ...(f.commit ? { commit: f.commit, authorDate: f.authorDate } : {}),
          },
        })),
        properties: {
          notScanned: notScanned.map((n) => ({
            name: n.name,
            environment: n.environment,
            reason: n.reason,
          })),
        },
      },
    ],
  };
}
