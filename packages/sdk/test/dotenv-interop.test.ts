// Every export format read back by the REAL readers its users run: the npm
// `dotenv` package (default and `fast` parsers), python-dotenv through Debian's
// /usr/bin/python3 with `dotenv_values(path)` as users call it, bash `source`,
// the `yaml` package and JSON.parse. Each value comes back byte for byte, or
// the writer refuses it and no quoting would have served those readers.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import {
  DotenvValueError,
  formatDotenv,
  formatJson,
  formatShell,
  formatYaml,
  parseDotenv,
  UnwritableValueError,
  type DotenvDialect,
} from '../src/dotenv.js';
import { CORPUS } from './support/dotenv-corpus.js';

const dotenv = createRequire(import.meta.url)('dotenv') as {
  parse(src: string | Buffer, options?: { fast?: boolean }): Record<string, string>;
};

const PYTHON = '/usr/bin/python3';
const PY_READ = [
  'import json, sys',
  'from dotenv import dotenv_values',
  'print(json.dumps([dotenv_values(p) for p in sys.argv[1:]]))',
].join('\n');

/** Why python-dotenv cannot be run here, or undefined when it can. */
function pythonMissing(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import dotenv'], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  const reason = `python-dotenv is not importable by ${PYTHON}: ${(probe.error?.message ?? probe.stderr).trim()}`;
  if (process.env.COFFER_REQUIRE_SERVICES === '1')
    throw new Error(`${reason}, and COFFER_REQUIRE_SERVICES=1 requires it`);
  return reason;
}
const PYTHON_MISSING = pythonMissing();

/** Why a value cannot be exact in this dialect by construction (the documented refusals). */
function documentedRefusal(value: string, dialect: DotenvDialect): boolean {
  if (value.includes('\0')) return true;
  if (dialect !== 'node' && /\$\{[^}:]*(?::-[^}]*)?\}/.test(value)) return true;
  return false;
}

const dir = mkdtempSync(join(tmpdir(), 'coffer-dotenv-interop-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
function file(text: string): string {
  const path = join(dir, `f${files++}.env`);
  writeFileSync(path, text);
  return path;
}

/** python-dotenv's reading of each file, in one interpreter. */
function readWithPython(paths: string[]): Array<Record<string, string | null>> {
  const out = execFileSync(PYTHON, ['-c', PY_READ, ...paths], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    // python-dotenv substitutes from the environment: keep it small and known.
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
  });
  return JSON.parse(out) as Array<Record<string, string | null>>;
}

const name = (i: number) => `K${i}`;

/** Every way of writing one value a reader might accept, to show a refusal was necessary. */
function candidates(value: string): string[] {
  const lf = (s: string) => s.replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  return [
    value,
    `'${value}'`,
    `"${value}"`,
    `"${lf(value)}"`,
    `"${lf(value.replace(/[\\"]/g, '\\$&'))}"`,
    `'${value.replace(/[\\']/g, '\\$&')}'`,
    `\`${value}\``,
  ];
}

const NEIGHBOURS = 'A1=\'x\'\nA2="y"\nA3=`z`\n';

interface Reading {
  dialect: DotenvDialect;
  written: Map<number, string>;
  refused: Map<number, DotenvValueError>;
  text: string;
}

function writeCorpus(dialect: DotenvDialect): Reading {
  const written = new Map<number, string>();
  const refused = new Map<number, DotenvValueError>();
  CORPUS.forEach(([, value], i) => {
    try {
      written.set(i, formatDotenv({ [name(i)]: value }, { dialect }));
    } catch (err) {
      assert.ok(err instanceof DotenvValueError, `${CORPUS[i]![0]}: ${String(err)}`);
      refused.set(i, err);
    }
  });
  return { dialect, written, refused, text: [...written.values()].join('') };
}

const readings = (['both', 'node', 'python'] as const).map(writeCorpus);

describe('formatDotenv read back by the real readers', () => {
  for (const reading of readings) {
    const { dialect, written, refused, text } = reading;
    const readers: Array<[string, (path: string, text: string) => Record<string, string | null>]> =
      [];
    if (dialect !== 'python') {
      readers.push(['npm dotenv', (_p, t) => dotenv.parse(t)]);
      readers.push(['npm dotenv (fast)', (_p, t) => dotenv.parse(t, { fast: true })]);
    }
    readers.push([
      'Coffer',
      (_p, t) => Object.fromEntries(parseDotenv(t, { dialect }).map((e) => [e.name, e.value])),
    ]);

    test(`dialect ${dialect}: ${written.size} of ${CORPUS.length} values written, each read back exactly`, () => {
      assert.ok(written.size >= 40, `only ${written.size} written`);
      const expected = Object.fromEntries([...written.keys()].map((i) => [name(i), CORPUS[i]![1]]));
      const path = file(text);
      for (const [reader, read] of readers) {
        const got = read(path, text);
        for (const i of written.keys())
          assert.equal(
            got[name(i)],
            CORPUS[i]![1],
            `${reader} read "${CORPUS[i]![0]}" wrong from ${JSON.stringify(written.get(i))}`,
          );
        assert.deepEqual(Object.keys(got).sort(), Object.keys(expected).sort(), reader);
      }
    });

    if (dialect !== 'node')
      test(
        `dialect ${dialect}: python-dotenv reads every written value exactly`,
        { skip: PYTHON_MISSING },
        () => {
          const [got] = readWithPython([file(text)]);
          for (const i of written.keys())
            assert.equal(
              got![name(i)],
              CORPUS[i]![1],
              `python-dotenv read "${CORPUS[i]![0]}" wrong from ${JSON.stringify(written.get(i))}`,
            );
          assert.equal(Object.keys(got!).length, written.size);
        },
      );

    test(
      `dialect ${dialect}: each refusal names the secret, and no quoting would have served`,
      { skip: dialect !== 'node' && PYTHON_MISSING },
      () => {
        const tried: Array<{ i: number; text: string; path: string }> = [];
        for (const [i, err] of refused) {
          assert.equal(err.secretName, name(i));
          assert.equal(err.dialect, dialect);
          assert.match(err.message, new RegExp(`^${name(i)} cannot be written`));
          assert.ok(err instanceof UnwritableValueError);
          if (documentedRefusal(CORPUS[i]![1], dialect)) continue;
          for (const candidate of candidates(CORPUS[i]![1])) {
            // Lines after it, with every quote, show a quoting that swallows its neighbours.
            const t = `${name(i)}=${candidate}\n${NEIGHBOURS}`;
            tried.push({ i, text: t, path: file(t) });
          }
        }
        const python = dialect === 'node' ? [] : readWithPython(tried.map((c) => c.path));
        tried.forEach(({ i, text: t }, n) => {
          const value = CORPUS[i]![1];
          const intact = (read: Record<string, string | null>, backtick: string) =>
            read[name(i)] === value && read.A1 === 'x' && read.A2 === 'y' && read.A3 === backtick;
          const exact =
            (dialect === 'python' ||
              (intact(dotenv.parse(t), 'z') && intact(dotenv.parse(t, { fast: true }), 'z'))) &&
            (dialect === 'node' || intact(python[n]!, '`z`'));
          assert.ok(
            !exact,
            `"${CORPUS[i]![0]}" was refused, but ${JSON.stringify(t)} reads back exactly`,
          );
        });
      },
    );
  }

  test('the refusals are the documented ones', () => {
    const refusedLabels = (d: DotenvDialect) =>
      [...readings.find((r) => r.dialect === d)!.refused.keys()].map((i) => CORPUS[i]![0]);
    assert.deepEqual(
      refusedLabels('python'),
      CORPUS.filter(
        ([, v]) => documentedRefusal(v, 'python') || (/\\$/.test(v) && /[#\s'"`]|^$/.test(v)),
      ).map(([l]) => l),
    );
    assert.deepEqual(
      refusedLabels('node').filter((l) => CORPUS.find(([x]) => x === l)![1].includes('\0')),
      ['NUL'],
    );
  });
});

describe('formatShell read back by bash', () => {
  test('set -a; source FILE gives every value exactly (NUL refused)', () => {
    const secrets: Record<string, string> = {};
    CORPUS.forEach(([label, value], i) => {
      if (value.includes('\0')) {
        assert.throws(
          () => formatShell({ [name(i)]: value }),
          (err: unknown) => err instanceof UnwritableValueError && err.secretName === name(i),
          label,
        );
      } else secrets[name(i)] = value;
    });
    const path = file(formatShell(secrets));
    const out = execFileSync('bash', ['-c', 'set -a; source "$1"; env -0', 'bash', path], {
      env: { PATH: '/usr/bin:/bin' },
      maxBuffer: 64 * 1024 * 1024,
    });
    const env: Record<string, string> = {};
    for (const entry of out.toString('utf8').split('\0')) {
      const eq = entry.indexOf('=');
      if (/^K\d+$/.test(entry.slice(0, eq))) env[entry.slice(0, eq)] = entry.slice(eq + 1);
    }
    assert.deepEqual(env, secrets);
    assert.ok(Object.keys(env).length >= 40);
  });
});

describe('formatYaml and formatJson read back by their parsers', () => {
  const secrets = Object.fromEntries(CORPUS.map(([, v], i) => [name(i), v]));
  test('the yaml package reads every value exactly, NUL included', () => {
    for (const version of ['1.2', '1.1'] as const)
      assert.deepEqual(parseYaml(formatYaml(secrets), { version }), secrets, `YAML ${version}`);
  });
  test('JSON.parse reads every value exactly, NUL included', () => {
    assert.deepEqual(JSON.parse(formatJson(secrets)), secrets);
  });
});
