// Helpers of the `coffer scan` tests: real git repositories, where a planted
// text sits (line and column as a user's editor counts them), and every form
// a value could be leaked in, computed with Node's own encoders (independent
// of the scanner's), to search outputs and files for.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, relative } from 'node:path';

/** Author and committer fixed, dates given per commit. */
export function git(dir: string, args: string[], date = '2026-03-04T05:06:07Z'): string {
  return execFileSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      GIT_AUTHOR_NAME: 'Dev',
      GIT_AUTHOR_EMAIL: 'dev@example.test',
      GIT_COMMITTER_NAME: 'Dev',
      GIT_COMMITTER_EMAIL: 'dev@example.test',
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
      GIT_CONFIG_NOSYSTEM: '1',
    },
  }).trim();
}

export function initRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  git(dir, ['init', '-q', '-b', 'main']);
}

export function write(dir: string, file: string, content: string | Buffer): void {
  mkdirSync(dirname(join(dir, file)), { recursive: true });
  writeFileSync(join(dir, file), content);
}

/** `path:line:column` of `needle` in `content` (columns in code points, 1-based). */
export function at(path: string, content: string, needle: string): string {
  const index = content.indexOf(needle);
  assert.ok(index >= 0, `${needle.slice(0, 3)}… is not in ${path}`);
  const before = content.slice(0, index);
  const line = before.split('\n').length;
  const column = [...before.slice(before.lastIndexOf('\n') + 1)].length + 1;
  return `${path}:${line}:${column}`;
}

/** A random token of `length` characters from `alphabet`. */
export function token(
  length: number,
  alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789',
) {
  const bytes = randomBytes(length);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

/**
 * Every form a leak of `value` could take in an output: as it is, its first
 * half (a prefix long enough to mean something), JSON-escaped, URL-encoded,
 * hex, and base64 / base64url at each of the three offsets (the part that
 * depends on the value only).
 */
export function formsOf(value: string): string[] {
  const raw = Buffer.from(value);
  const forms = new Set<string>([
    value,
    value.slice(0, Math.max(8, Math.ceil(value.length / 2))),
    JSON.stringify(value).slice(1, -1),
    encodeURIComponent(value),
    raw.toString('hex'),
    raw.toString('hex').toUpperCase(),
  ]);
  for (const codec of ['base64', 'base64url'] as const) {
    for (const [prefix, skip] of [
      ['', 0],
      ['x', 2],
      ['xy', 3],
    ] as const) {
      const encoded = Buffer.from(`${prefix}${value}`).toString(codec).replace(/=+$/, '');
      const keep = encoded.slice(skip, encoded.length - 1);
      if (keep.length >= 8) forms.add(keep);
    }
  }
  return [...forms].filter((f) => f.length >= 6);
}

/** Asserts that none of `texts` holds any form of any of `values`; `where` names each text. */
export function assertNoLeak(values: Record<string, string>, texts: Map<string, string>): void {
  for (const [name, value] of Object.entries(values)) {
    for (const form of formsOf(value)) {
      for (const [where, text] of texts) {
        assert.ok(!text.includes(form), `a form of ${name} is in ${where}`);
      }
    }
  }
}

/** Every regular file under `dir` with its size and modification time. */
export function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        const s = statSync(path);
        out.set(relative(dir, path), `${s.size}:${s.mtimeMs}`);
      }
    }
  };
  walk(dir);
  return out;
}

/** The files under `dir` that are new or changed since `before`, with their contents. */
export function changedFiles(dir: string, before: Map<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, stamp] of snapshot(dir)) {
    if (before.get(path) !== stamp)
      out.set(join(dir, path), readFileSync(join(dir, path), 'latin1'));
  }
  return out;
}
