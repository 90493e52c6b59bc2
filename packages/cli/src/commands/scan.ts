import { closeSync, createReadStream, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { list, PROJECT_OPTION, str, type Command, type Values } from '../cli/command.js';
import { CliError, describeError, UsageError } from '../cli/errors.js';
import { note, printJson } from '../cli/output.js';
import { Context } from '../context.js';
import { baselineKey, findingHash, readBaseline, writeBaseline } from '../scan/baseline.js';
import { listFiles } from '../scan/files.js';
import { scanHistory } from '../scan/history.js';
import { installHook } from '../scan/hook.js';
import {
  jsonReport,
  notScannedNote,
  sarifReport,
  textReport,
  type Finding,
  type ScanSummary,
} from '../scan/report.js';
import { looksBinary, SecretScanner, type Hit } from '../scan/scanner.js';
import { scanStaged, scanStagedBinaries, stagedDiff } from '../scan/staged.js';
import { keyedTags, writeCache } from '../scan/cache.js';
import { ScanCacheAccess } from '../scan/cached.js';
import { loadScanValues, type NotScanned, type ScanValues } from '../scan/values.js';

/** The version of packages/cli/package.json, put in by the build. */
declare const COFFER_VERSION: string | undefined;
const VERSION = typeof COFFER_VERSION === 'string' ? COFFER_VERSION : '0.0.0-unbuilt';

/** Exit codes of `coffer scan`: what CI gates on. */
const CLEAN = 0;
const FOUND = 1;
const FAILED = 2;
/** Files above this size are read in windows instead of whole. */
const WHOLE_FILE_LIMIT = 64 << 20;

const scan: Command = {
  name: 'scan',
  summary: "find the team's secret values where they leaked (files, git history, logs)",
  args: '[PATH…]',
  description: [
    'Looks for the exact values of the secrets you can decrypt (every environment of the',
    'project, or those given with --env) in the files under PATH (default: the current',
    'directory), as they are and encoded: JSON-escaped, URL-encoded, base64 (standard and',
    'URL-safe, at any offset in a longer base64 text), hex, and as the password of a',
    '`scheme://user:password@host` URL. Matching happens on this machine: no value is sent',
    'anywhere, and none is printed, logged or written; findings name the secret and its',
    'environment only:',
    '',
    '  path:line:column  NAME (environment) [encoding]',
    '',
    'Inside a git repository the files are those git would commit (.gitignore honoured);',
    'outside one, .gitignore files are read from PATH down. Binary files are skipped.',
    'Values shorter than --min-length or too common (true, localhost, 3000) are not',
    'scanned; they are listed by name on stderr.',
    '',
    '  coffer scan --git            every blob in the history, with the commit that first added it',
    '  some-job 2>&1 | coffer scan --stdin    a build log',
    '  coffer scan --install-hook   a pre-commit hook scanning the staged lines (--staged)',
    '',
    'Exit codes: 0 nothing found, 1 findings, 2 error. See docs/scan.md.',
  ].join('\n'),
  options: {
    ...PROJECT_OPTION,
    env: {
      type: 'string',
      short: 'e',
      value: 'ENV',
      multiple: true,
      description: 'only this environment (default: every environment you can decrypt)',
    },
    git: {
      type: 'boolean',
      description: 'scan every blob of the repository’s history (PATH: the repository)',
    },
    stdin: { type: 'boolean', description: 'scan standard input (a log piped in)' },
    staged: {
      type: 'boolean',
      description: 'scan the lines the staged changes add (what the pre-commit hook runs)',
    },
    'no-ignore': { type: 'boolean', description: 'scan ignored files too' },
    binary: { type: 'boolean', description: 'scan binary files too' },
    'no-cache': {
      type: 'boolean',
      description: 'with --staged: neither use nor write the keyed-hash cache',
    },
    'min-length': {
      type: 'string',
      value: 'N',
      description: 'leave out values shorter than N characters (default 8)',
    },
    format: {
      type: 'string',
      value: 'FORMAT',
      description: 'text (default), json or sarif (SARIF 2.1.0, for GitHub code scanning)',
    },
    baseline: {
      type: 'string',
      value: 'FILE',
      description: 'leave out the findings accepted in FILE (keyed hashes only)',
    },
    'update-baseline': {
      type: 'boolean',
      description: 'write every current finding to the --baseline FILE and exit 0',
    },
    'install-hook': {
      type: 'boolean',
      description: 'install a git pre-commit hook that runs `coffer scan --staged`',
    },
    force: { type: 'boolean', description: 'with --install-hook: replace an existing hook' },
  },
  positionals: [0, Number.MAX_SAFE_INTEGER],
  async run({ values, positionals }) {
    const options = parseOptions(values, positionals);
    try {
      return await runScan(values, options);
    } catch (err) {
      if (err instanceof UsageError) throw err;
      process.stderr.write(`coffer: ${describeError(err).line}\n`);
      return FAILED;
    }
  },
};

type Mode = ScanSummary['mode'] | 'install-hook';

interface ScanOptions {
  mode: Mode;
  paths: string[];
  envs: string[];
  minLength: number;
  format: 'text' | 'json' | 'sarif';
  noIgnore: boolean;
  binary: boolean;
  noCache: boolean;
  baseline: string | undefined;
  updateBaseline: boolean;
}

function parseOptions(values: Values, positionals: string[]): ScanOptions {
  const modes = (['git', 'stdin', 'staged', 'install-hook'] as const).filter((m) => values[m]);
  if (modes.length > 1)
    throw new UsageError(`choose one of ${modes.map((m) => `--${m}`).join(', ')}`, 'scan');
  const mode: Mode = modes[0] ?? 'files';
  if ((mode === 'stdin' || mode === 'staged' || mode === 'install-hook') && positionals.length)
    throw new UsageError(`--${mode} takes no PATH`, 'scan');
  if (mode === 'git' && positionals.length > 1)
    throw new UsageError('--git takes one PATH: the repository', 'scan');
  const minText = str(values, 'min-length') ?? '8';
  if (!/^\d+$/.test(minText) || Number(minText) < 1 || Number(minText) > 4096)
    throw new UsageError('--min-length must be a whole number from 1 to 4096', 'scan');
  const format = values.json ? 'json' : (str(values, 'format') ?? 'text');
  if (format !== 'text' && format !== 'json' && format !== 'sarif')
    throw new UsageError('--format must be text, json or sarif', 'scan');
  const baseline = str(values, 'baseline');
  if (values['update-baseline'] && !baseline)
    throw new UsageError('--update-baseline needs --baseline FILE', 'scan');
  if (values.force && mode !== 'install-hook')
    throw new UsageError('--force goes with --install-hook', 'scan');
  if (values['no-cache'] && mode !== 'staged')
    throw new UsageError('--no-cache goes with --staged', 'scan');
  return {
    mode,
    paths: positionals.length ? positionals : ['.'],
    envs: list(values, 'env'),
    minLength: Number(minText),
    format,
    noIgnore: values['no-ignore'] === true,
    binary: values.binary === true,
    noCache: values['no-cache'] === true,
    baseline,
    updateBaseline: values['update-baseline'] === true,
  };
}

async function runScan(values: Values, options: ScanOptions): Promise<number> {
  if (options.mode === 'install-hook') {
    const extraArgs = [
      ...(str(values, 'project') ? ['--project', str(values, 'project')!] : []),
      ...options.envs.flatMap((e) => ['--env', e]),
      ...(str(values, 'min-length') ? ['--min-length', String(options.minLength)] : []),
    ];
    const hook = await installHook(process.cwd(), { force: values.force === true, extraArgs });
    note(`coffer: installed the pre-commit hook ${hook} (it runs \`coffer scan --staged\`)`);
    return CLEAN;
  }
  const mode = options.mode;
  // Fails early on a bad baseline or path, before any value is decrypted.
  const accepted =
    options.baseline && !options.updateBaseline
      ? readBaseline(options.baseline)
      : new Set<string>();

  // The hook's diff is read while the values (or the cache) are checked.
  const diff = mode === 'staged' ? stagedDiff(process.cwd()) : null;
  diff?.catch(() => undefined); // awaited below; never an unhandled rejection
  const ctx = new Context(values);
  const cache =
    mode === 'staged' && !options.noCache
      ? await ScanCacheAccess.open(ctx, options.envs, options.minLength).catch(() => null)
      : null;
  try {
    if (cache) {
      const answered = await scanFromCache(cache, options, diff!);
      if (answered !== null) return answered;
    }
    return await scanWithValues(ctx, options, accepted, diff, cache);
  } finally {
    cache?.wipe();
    diff?.then((d) => d.fill(0)).catch(() => undefined);
  }
}

/** Above this many bytes of diff, matching the values themselves is faster than the keyed hashes. */
const KEYED_DIFF_LIMIT = 4 << 20;

/**
 * The hook's fast path: when the keyed-hash cache is current, the staged lines
 * are matched against its keyed hashes and no value is fetched or decrypted.
 * Null when the full path must run instead: no cache, a changed one, a large
 * diff, or findings that need the baseline's fingerprints (--json, --format
 * sarif, --baseline), which only the environments' keys give.
 */
async function scanFromCache(
  cache: ScanCacheAccess,
  options: ScanOptions,
  diff: Promise<Buffer>,
): Promise<number | null> {
  const cached = cache.read();
  if (!cached || !(await cache.current(cached, options.envs))) return null;
  const staged = await diff;
  if (staged.length > KEYED_DIFF_LIMIT) return null;
  const scanner = cache.scanner(cached);
  try {
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const result = scanStaged(staged, scanner);
    const binaries = options.binary
      ? await scanStagedBinaries(process.cwd(), scanner, KEYED_DIFF_LIMIT - staged.length)
      : null;
    if (options.binary && binaries === null) return null;
    const hits = binaries ? [...result.hits, ...binaries.hits] : result.hits;
    if (hits.length > 0 && (options.format !== 'text' || options.baseline)) return null;
    const cpu = process.cpuUsage(cpuBefore);
    const { secrets, notScanned } = cached.header;
    const findings = hits.map((hit): Finding => {
      const secret = secrets[hit.secret]!;
      return {
        ...hit,
        secretId: secret.id,
        name: secret.name,
        environment: secret.environment,
        fingerprint: '',
      };
    });
    const summary: ScanSummary = {
      mode: 'staged',
      scanned: result.files + (binaries?.files ?? 0),
      bytes: result.bytes + (binaries?.bytes ?? 0),
      skippedBinary: binaries ? 0 : result.binaries,
      secrets: secrets.length,
      patterns: scanner.patternCount,
      seconds: (performance.now() - started) / 1000,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      baselined: 0,
      cache: 'used',
    };
    report(findings, notScanned, summary, options);
    return findings.length > 0 ? FOUND : CLEAN;
  } finally {
    scanner.wipe();
  }
}

async function scanWithValues(
  ctx: Context,
  options: ScanOptions,
  accepted: Set<string>,
  diff: Promise<Buffer> | null,
  cache: ScanCacheAccess | null,
): Promise<number> {
  const mode = options.mode as ScanSummary['mode'];
  const loaded = await loadScanValues(
    ctx,
    options.envs,
    options.minLength,
    baselineKey,
    cache ? (projectId, envId) => cache.check(projectId, envId) : undefined,
  );
  let scanner: SecretScanner | null = null;
  let written = false;
  try {
    scanner = new SecretScanner(loaded.values, (patterns, table) => {
      if (!cache || loaded.environments.some((e) => !e.etag)) return;
      const { anchorTags, fullTags } = keyedTags(cache.keys, patterns);
      written = writeCache(cache.path, cache.keys, cache.descriptor, {
        header: {
          projectId: loaded.projectId,
          environments: loaded.environments,
          secrets: loaded.secrets,
          notScanned: loaded.notScanned,
        },
        patterns: table,
        anchorTags,
        fullTags,
      });
    });
    forgetValues(loaded);
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const result = await scanTarget(scanner, options, diff);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);

    let findings = result.hits.map((hit) => toFinding(hit, loaded));
    const total = findings.length;
    if (options.updateBaseline) {
      writeBaseline(
        options.baseline!,
        findings.map((f) => f.fingerprint),
      );
      note(`coffer scan: wrote ${total} finding(s) to the baseline ${options.baseline}`);
      return CLEAN;
    }
    findings = findings.filter((f) => !accepted.has(f.fingerprint));
    const summary: ScanSummary = {
      mode,
      scanned: result.scanned,
      bytes: result.bytes,
      skippedBinary: result.skippedBinary,
      secrets: loaded.secrets.length,
      patterns: scanner.patternCount,
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      baselined: total - findings.length,
      ...(written ? { cache: 'written' as const } : {}),
    };
    report(findings, loaded.notScanned, summary, options);
    return findings.length > 0 ? FOUND : CLEAN;
  } finally {
    scanner?.wipe();
    for (const key of loaded.baselineKeys.values()) key.fill(0);
  }
}

function report(
  findings: Finding[],
  notScanned: NotScanned[],
  summary: ScanSummary,
  options: ScanOptions,
): void {
  if (options.format === 'json') printJson(jsonReport(findings, notScanned, summary));
  else if (options.format === 'sarif') printJson(sarifReport(findings, notScanned, VERSION));
  else process.stdout.write(textReport(findings));
  const skipped = notScannedNote(notScanned);
  if (skipped) note(skipped);
  note(summaryLine(findings.length, summary));
}

/** The values are in the matcher now: zero the decrypted bytes and drop the strings. */
function forgetValues(loaded: ScanValues): void {
  for (const value of loaded.values) value.bytes.fill(0);
  loaded.values.length = 0;
}

interface Located extends Hit {
  path: string;
  commit?: string | null;
  authorDate?: string | null;
}

interface TargetResult {
  hits: Located[];
  scanned: number;
  bytes: number;
  skippedBinary: number;
}

async function scanTarget(
  scanner: SecretScanner,
  options: ScanOptions,
  diff: Promise<Buffer> | null,
): Promise<TargetResult> {
  switch (options.mode) {
    case 'stdin': {
      const { hits, bytes } = await scanner.scanStream(process.stdin);
      return {
        hits: hits.map((h) => ({ ...h, path: '(stdin)' })),
        scanned: 1,
        bytes,
        skippedBinary: 0,
      };
    }
    case 'staged': {
      const { hits, files, bytes, binaries } = scanStaged(await diff!, scanner);
      if (!options.binary) return { hits, scanned: files, bytes, skippedBinary: binaries };
      const whole = (await scanStagedBinaries(process.cwd(), scanner))!;
      return {
        hits: [...hits, ...whole.hits],
        scanned: files + whole.files,
        bytes: bytes + whole.bytes,
        skippedBinary: 0,
      };
    }
    case 'git': {
      const repo = options.paths[0]!;
      const history = await scanHistory(repo, scanner, options.binary);
      return {
        hits: history.hits,
        scanned: history.blobs,
        bytes: history.bytes,
        skippedBinary: history.skippedBinary,
      };
    }
    default:
      return scanFiles(scanner, options);
  }
}

async function scanFiles(scanner: SecretScanner, options: ScanOptions): Promise<TargetResult> {
  for (const path of options.paths) {
    try {
      statSync(path);
    } catch {
      throw new CliError('not_found', `no such file or directory: ${path}`);
    }
  }
  const files = await listFiles(options.paths, options.noIgnore);
  const hits: Located[] = [];
  let bytes = 0;
  let skippedBinary = 0;
  const reader = new WholeFileReader();
  try {
    for (const file of files) {
      let found: Hit[];
      const content = reader.read(file.absolute, file.display);
      if (content === null) continue; // removed since it was listed
      if (content === 'too large') {
        const probe = readProbe(file.absolute);
        if (!options.binary && looksBinary(probe)) {
          skippedBinary++;
          continue;
        }
        const streamed = await scanner.scanStream(createReadStream(file.absolute));
        found = streamed.hits;
        bytes += streamed.bytes;
      } else {
        const binary = !options.binary && looksBinary(content);
        if (!binary) {
          bytes += content.length;
          found = scanner.scanBuffer(content);
        } else found = [];
        content.fill(0);
        if (binary) {
          skippedBinary++;
          continue;
        }
      }
      for (const hit of found) hits.push({ ...hit, path: file.display });
    }
  } finally {
    reader.wipe();
  }
  return { hits, scanned: files.length - skippedBinary, bytes, skippedBinary };
}

/**
 * Reads whole files into one buffer kept from file to file: no allocation per
 * file, and one place to zero. `read` returns a view valid until the next call.
 */
class WholeFileReader {
  private buffer = Buffer.allocUnsafe(1 << 20);

  read(path: string, display: string): Buffer | 'too large' | null {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new CliError('unreadable', `cannot read ${display}: ${(err as Error).message}`);
    }
    try {
      const size = fstatSync(fd).size;
      if (size > WHOLE_FILE_LIMIT) return 'too large';
      if (size > this.buffer.length) {
        this.buffer.fill(0);
        this.buffer = Buffer.allocUnsafe(Math.max(size, this.buffer.length * 2));
      }
      let n = 0;
      for (let got = -1; n < size && got !== 0; n += got)
        got = readSync(fd, this.buffer, n, size - n, n);
      return this.buffer.subarray(0, n);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EISDIR') return null;
      throw new CliError('unreadable', `cannot read ${display}: ${(err as Error).message}`);
    } finally {
      closeSync(fd);
    }
  }

  wipe(): void {
    this.buffer.fill(0);
  }
}

function readProbe(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const probe = Buffer.alloc(8000);
    return probe.subarray(0, readSync(fd, probe, 0, probe.length, 0));
  } finally {
    closeSync(fd);
  }
}

function toFinding(hit: Located, loaded: ScanValues): Finding {
  const secret = loaded.secrets[hit.secret]!;
  const location = { path: hit.path, line: hit.line, column: hit.column, commit: hit.commit };
  return {
    path: hit.path,
    line: hit.line,
    column: hit.column,
    secretId: secret.id,
    name: secret.name,
    environment: secret.environment,
    encoding: hit.encoding,
    ...(hit.commit !== undefined ? { commit: hit.commit, authorDate: hit.authorDate ?? null } : {}),
    fingerprint: findingHash(loaded.baselineKeys.get(secret.environmentId)!, secret.id, location),
  };
}

function summaryLine(found: number, s: ScanSummary): string {
  const what = { files: 'files', git: 'blobs', stdin: 'stream', staged: 'staged files' }[s.mode];
  const mb = (s.bytes / 1e6).toFixed(1);
  const parts = [
    `${found} finding${found === 1 ? '' : 's'}`,
    `${s.scanned} ${what} (${mb} MB) in ${s.seconds.toFixed(2)} s`,
    `${s.secrets} secret${s.secrets === 1 ? '' : 's'} looked for`,
  ];
  if (s.skippedBinary) parts.push(`${s.skippedBinary} binary skipped (--binary scans them)`);
  if (s.baselined) parts.push(`${s.baselined} in the baseline`);
  if (s.cache === 'used') parts.push('matched against the keyed-hash cache');
  return `coffer scan: ${parts.join('; ')}`;
}

export const commands: Command[] = [scan];
