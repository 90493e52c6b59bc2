// The scanner's parts on their own: the matcher (q-gram filter and trie) against a naive
// search, each encoded form decoded back by Node's own decoders, and the
// gitignore matcher against `git check-ignore` on the same rules and paths.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { cacheKeys, KeyedMatcher, keyedTags } from '../src/scan/cache.js';
import { variantsOf } from '../src/scan/encodings.js';
import { IgnoreRules } from '../src/scan/ignore.js';
import { Matcher } from '../src/scan/matcher.js';
import { SecretScanner } from '../src/scan/scanner.js';
import { sipHash, sipKey } from '../src/scan/siphash.js';

/** A deterministic generator, so a failure can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function naive(patterns: Buffer[], text: Buffer): string[] {
  const out: string[] = [];
  patterns.forEach((p, i) => {
    for (let at = text.indexOf(p); at !== -1; at = text.indexOf(p, at + 1)) out.push(`${i}@${at}`);
  });
  return out.sort();
}

describe('Matcher', () => {
  test('finds exactly what a naive search finds, over small and large alphabets', () => {
    for (const [seed, alphabet, count] of [
      [1, 'ab', 30],
      [2, 'abc', 200],
      [3, 'abcdefghijklmnopqrstuvwxyz0123456789', 500],
      [4, '\u0000\u00ff\n ab', 100],
    ] as const) {
      const rnd = random(seed);
      const pick = (n: number) =>
        Buffer.from(
          Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join(''),
          'latin1',
        );
      const patterns = Array.from({ length: count }, () => pick(1 + Math.floor(rnd() * 30)));
      // Patterns that share prefixes, are prefixes or suffixes of one another.
      patterns.push(Buffer.concat([patterns[0]!, patterns[1]!]), patterns[2]!.subarray(1));
      const unique = patterns.filter(
        (p, i) => p.length > 0 && patterns.findIndex((q) => q.equals(p)) === i,
      );
      const text = Buffer.concat([pick(20_000), ...unique.slice(0, 20), pick(5_000)]);
      const matcher = new Matcher(unique);
      const found: string[] = [];
      matcher.scan(text, text.length, (p, start) => found.push(`${p}@${start}`));
      assert.deepEqual(found.sort(), naive(unique, text), `seed ${seed}`);
    }
  });

  test('reports only matches that start before the end given, and lie inside the buffer', () => {
    const matcher = new Matcher([Buffer.from('needle-in-the-haystack')]);
    const text = Buffer.from('xx needle-in-the-haystack yy needle-in-the-hay');
    const found: number[] = [];
    matcher.scan(text, 10, (_, start) => found.push(start));
    assert.deepEqual(found, [3]);
    const none: number[] = [];
    matcher.scan(text, 3, (_, start) => none.push(start));
    assert.deepEqual(none, []);
  });

  test('finds long patterns at every offset modulo the sampling stride, up to both ends', () => {
    const long = Buffer.from('L0ng-Pattern-9f8e7d6c5b4a');
    const other = Buffer.from('another-long-one-0123456789');
    const matcher = new Matcher([long, other]);
    for (let before = 0; before < 9; before++) {
      for (let after = 0; after < 9; after++) {
        const text = Buffer.concat([
          Buffer.alloc(before, 0x2e),
          long,
          Buffer.alloc(after, 0x2e),
          other,
        ]);
        const found: string[] = [];
        matcher.scan(text, text.length, (p, start) => found.push(`${p}@${start}`));
        assert.deepEqual(found.sort(), naive([long, other], text), `${before}/${after}`);
        // A window that ends just after the first pattern's start still reports it, once.
        const early: string[] = [];
        matcher.scan(text, before + 1, (p, start) => early.push(`${p}@${start}`));
        assert.deepEqual(early, [`0@${before}`], `${before}/${after}`);
      }
    }
  });

  test('wipe() leaves no byte of a pattern in the matcher', () => {
    const value = Buffer.from('wipe-me-0123456789-secret');
    const matcher = new Matcher([value]);
    matcher.wipe();
    const found: number[] = [];
    matcher.scan(value, value.length, (_, start) => found.push(start));
    assert.deepEqual(found, []);
    const store = (matcher as unknown as { store: Buffer }).store;
    assert.ok(store.every((b) => b === 0));
  });
});

describe('keyed-hash matcher (the hook cache)', () => {
  test('SipHash-2-4 gives the reference vectors (key 00..0f, message 00..len-1)', () => {
    // From the SipHash paper's test vectors (vectors.h), output bytes little-endian.
    const expected = [
      '310e0edd47db6f72',
      'fd67dc93c539f874',
      '5a4fa9d909806c0d',
      '2d7efbd796666785',
      'b7877127e09427cf',
      '8da699cd64557618',
      'cee3fe586e46c9cb',
      '37d1018bf50002ab',
      '6224939a79f5f593',
    ];
    const key = sipKey(Uint8Array.from({ length: 16 }, (_, i) => i));
    const out = new Int32Array(2);
    expected.forEach((hex, length) => {
      // At an offset, as the scan calls it.
      const message = Uint8Array.from({ length: length + 3 }, (_, i) => (i < 3 ? 0xee : i - 3));
      sipHash(key, message, 3, length, out);
      const bytes = Buffer.alloc(8);
      bytes.writeUInt32LE(out[1]! >>> 0, 0);
      bytes.writeUInt32LE(out[0]! >>> 0, 4);
      assert.equal(bytes.toString('hex'), hex, `length ${length}`);
    });
  });

  test('finds exactly what the plain matcher finds, from keyed hashes only', () => {
    const keys = cacheKeys(randomBytes(32));
    for (const [seed, alphabet, count] of [
      [5, 'ab', 30],
      [6, 'abcdefghijklmnopqrstuvwxyz0123456789', 300],
      [7, '\u0000\u00ff\n ab', 60],
    ] as const) {
      const rnd = random(seed);
      const pick = (n: number) =>
        Buffer.from(
          Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join(''),
          'latin1',
        );
      const patterns = Array.from({ length: count }, () => pick(1 + Math.floor(rnd() * 30)));
      patterns.push(Buffer.concat([patterns[0]!, patterns[1]!]), patterns[2]!.subarray(1));
      const unique = patterns.filter(
        (p, i) => p.length > 0 && patterns.findIndex((q) => q.equals(p)) === i,
      );
      const text = Buffer.concat([pick(5_000), ...unique.slice(0, 20), pick(2_000)]);
      const { anchorTags, fullTags } = keyedTags(keys, unique);
      const keyed = new KeyedMatcher(
        keys,
        Int32Array.from(unique, (p) => p.length),
        anchorTags,
        fullTags,
      );
      const found: string[] = [];
      keyed.scan(text, text.length, (p, start) => found.push(`${p}@${start}`));
      assert.deepEqual(found.sort(), naive(unique, text), `seed ${seed}`);
      // Another credential's keys find nothing.
      const other = new KeyedMatcher(
        cacheKeys(randomBytes(32)),
        Int32Array.from(unique, (p) => p.length),
        anchorTags,
        fullTags,
      );
      const none: string[] = [];
      other.scan(text, text.length, (p, start) => none.push(`${p}@${start}`));
      assert.deepEqual(none, [], `seed ${seed}`);
    }
  });
});

describe('encoded forms', () => {
  const values = [
    'Xq7!mP2#vL9@wR4z/+=',
    'ünïcødé "quoted" \\ back\tslash',
    'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
  ];

  test('each form is found inside text made by the usual encoders, at every base64 offset', () => {
    for (const value of values) {
      const scanner = new SecretScanner([{ bytes: Buffer.from(value), text: value }]);
      const cases: [string, string][] = [
        [value, 'raw'],
        [JSON.stringify({ k: value }), 'json-escaped'],
        [encodeURIComponent(value), value === encodeURIComponent(value) ? 'raw' : 'url-encoded'],
        [Buffer.from(value).toString('hex'), 'hex'],
        [Buffer.from(value).toString('hex').toUpperCase(), 'hex'],
      ];
      for (const prefix of ['', 'a', 'ab', 'abc', 'abcd']) {
        cases.push([Buffer.from(`${prefix}${value}tail`).toString('base64'), 'base64']);
        cases.push([Buffer.from(`${prefix}${value}`).toString('base64url'), 'base64*']);
      }
      for (const [text, encoding] of cases) {
        const hits = scanner.scanBuffer(Buffer.from(`line one\nkey: ${text}\n`));
        assert.equal(
          hits.length > 0,
          true,
          `${encoding} of ${JSON.stringify(value)} not found in ${text}`,
        );
        if (encoding === 'base64*') assert.match(hits[0]!.encoding, /^base64(url)?$/);
        else if (!(encoding === 'json-escaped' && hits[0]!.encoding === 'raw'))
          assert.equal(hits[0]!.encoding, encoding, text);
        assert.equal(hits[0]!.line, 2);
        if (!encoding.startsWith('base64') && encoding !== 'json-escaped')
          assert.equal(hits[0]!.column, 6);
      }
      scanner.wipe();
    }
  });

  test('every form decodes back to the value (none is a guess)', () => {
    for (const value of values) {
      for (const v of variantsOf(Buffer.from(value), value)) {
        const text = v.bytes.toString('latin1');
        if (v.encoding === 'raw') assert.equal(v.bytes.toString('utf8'), value);
        if (v.encoding === 'hex') assert.equal(Buffer.from(text, 'hex').toString(), value);
        if (v.encoding === 'url-encoded') assert.equal(decodeURIComponent(text), value);
        if (v.encoding === 'json-escaped')
          assert.equal(JSON.parse(`"${v.bytes.toString('utf8')}"`), value);
        if (v.encoding === 'base64' || v.encoding === 'base64url') {
          // A run of the base64 of the value inside a longer stream, at one of the three offsets.
          const codec = v.encoding === 'base64' ? 'base64' : 'base64url';
          const streams = ['', 'x', 'xy'].map((p) => Buffer.from(`${p}${value}zz`).toString(codec));
          assert.ok(
            streams.some((stream) => stream.includes(text)),
            `${v.encoding} ${text}`,
          );
        }
      }
    }
  });

  test('base64 broken into lines (PEM, MIME, indented YAML, CRLF) is found across the breaks', () => {
    const value = 'Wr4pped/Secret+Value_0123456789abcdefXYZ';
    const scanner = new SecretScanner([{ bytes: Buffer.from(value), text: value }]);
    // A certificate-like payload holding the value somewhere in its middle.
    const payload = Buffer.concat([
      randomBytes(100),
      Buffer.from(`token=${value}\n`),
      randomBytes(90),
    ]);
    for (const [width, indent, eol, codec] of [
      [64, '', '\n', 'base64'],
      [76, '', '\r\n', 'base64'],
      [60, '    ', '\n', 'base64'],
      [20, '  ', '\n', 'base64url'],
    ] as const) {
      const encoded = payload.toString(codec);
      const rows = encoded.match(new RegExp(`.{1,${width}}`, 'g'))!;
      const text = `-----BEGIN THING-----${eol}${rows.map((r) => `${indent}${r}`).join(eol)}${eol}-----END THING-----${eol}`;
      const hits = scanner.scanBuffer(Buffer.from(text));
      assert.ok(hits.length >= 1, `width ${width}: not found`);
      assert.ok(
        hits.every((h) => h.encoding === codec || h.encoding === 'base64'),
        JSON.stringify(hits),
      );
      // Where it starts: the value is at byte 106 of the payload, so (106 mod 3 = 1)
      // the run that depends on it alone starts 2 characters into group 35.
      const run = 35 * 4 + 2;
      assert.deepEqual(
        [hits[0]!.line, hits[0]!.column],
        [2 + Math.floor(run / width), indent.length + (run % width) + 1],
        `width ${width}`,
      );
    }
    // Lines of ordinary text are not joined into base64.
    const prose = Buffer.from(`${value.slice(0, 20)}\n${value.slice(20)}\n`);
    assert.deepEqual(
      scanner.scanBuffer(prose).map((h) => h.encoding),
      [],
      'a raw value split over lines is not reported as base64',
    );
    scanner.wipe();
  });

  test('a value split over a window boundary of a stream is found once, at the right line', async () => {
    const value = 'stream-boundary-secret-0123456789';
    const scanner = new SecretScanner([{ bytes: Buffer.from(value), text: value }]);
    const head = Buffer.alloc((8 << 20) - 10, 'a\n');
    async function* chunks() {
      yield head;
      yield Buffer.from(`${value}\n`);
    }
    const { hits } = await scanner.scanStream(chunks());
    const lines = head.toString('latin1').split('\n').length;
    assert.deepEqual(
      hits.map((h) => [h.line, h.encoding]),
      [[lines, 'raw']],
    );
  });
});

describe('gitignore rules', () => {
  test('agree with git check-ignore on the same files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'coffer-ignore-'));
    try {
      const ignores: Record<string, string> = {
        '.gitignore': [
          '# comment',
          '*.log',
          '!keep.log',
          '/build',
          'tmp/',
          'doc/*.txt',
          '**/cache/**',
          'a/**/z.env',
          'name?.cfg',
          '[Ss]ecret*.yml',
          '\\#hash',
          'trailing.txt   ',
        ].join('\n'),
        'sub/.gitignore': ['*.env', '!local.env', 'only-here.txt', '/anchored.txt'].join('\n'),
      };
      const paths = [
        'x.log',
        'keep.log',
        'sub/deep/y.log',
        'build/out.js',
        'sub/build/out.js',
        'tmp/t.txt',
        'sub/tmp/t.txt',
        'doc/a.txt',
        'doc/more/b.txt',
        'q/cache/r/s.txt',
        'a/z.env',
        'a/b/c/z.env',
        'name1.cfg',
        'name12.cfg',
        'Secrets.yml',
        'secret-x.yml',
        '#hash',
        'trailing.txt',
        'sub/app.env',
        'sub/local.env',
        'sub/only-here.txt',
        'only-here.txt',
        'sub/anchored.txt',
        'sub/x/anchored.txt',
        'plain.txt',
      ];
      execFileSync('git', ['init', '-q', dir]);
      for (const [file, content] of Object.entries(ignores)) {
        mkdirSync(dirname(join(dir, file)), { recursive: true });
        writeFileSync(join(dir, file), content);
      }
      for (const p of paths) {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), 'x');
      }
      let gitIgnored: Set<string>;
      try {
        gitIgnored = new Set(
          execFileSync('git', ['-C', dir, 'check-ignore', '--no-index', ...paths], {
            encoding: 'utf8',
          })
            .split('\n')
            .filter(Boolean),
        );
      } catch (err) {
        gitIgnored = new Set(
          String((err as { stdout?: string }).stdout ?? '')
            .split('\n')
            .filter(Boolean),
        );
      }
      const ours = new Set(paths.filter((p) => ignoredByWalk(p, ignores)));
      assert.deepEqual([...ours].sort(), [...gitIgnored].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** What the walker decides: a path is ignored when it or a directory above it is. */
function ignoredByWalk(path: string, ignores: Record<string, string>): boolean {
  const parts = path.split('/');
  let rules = new IgnoreRules().add('', ignores['.gitignore'] ?? '');
  for (let i = 0; i < parts.length; i++) {
    const prefix = parts.slice(0, i + 1).join('/');
    const isDirectory = i < parts.length - 1;
    if (rules.ignored(prefix, isDirectory)) return true;
    if (isDirectory && ignores[`${prefix}/.gitignore`] !== undefined)
      rules = rules.add(prefix, ignores[`${prefix}/.gitignore`]!);
  }
  return false;
}
