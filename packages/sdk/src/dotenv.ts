/**
 * `.env` files and the other text forms secrets are imported from and exported
 * to (JSON, YAML, POSIX shell). Pure functions; no I/O, no crypto.
 *
 * The `.env` dialect read here is the common one (dotenv, docker compose):
 *
 * - `NAME=value` per line; blank lines and lines starting with `#` are ignored;
 *   an optional `export ` prefix is accepted; spaces around `=` are ignored.
 * - Unquoted values end at the end of the line or at ` #` (a comment after
 *   whitespace); surrounding whitespace is trimmed. `#` inside a word is kept.
 * - `'single'` and `` `backtick` `` quotes are literal: no escapes.
 * - `"double"` quotes understand `\n`, `\r`, `\t`, `\"`, `\\`, `\$` (other
 *   backslashes are kept as they are) and may span several lines.
 * - After a closing quote only whitespace and a `# comment` may follow.
 * - `${VAR}` and `$VAR` are NOT expanded: values are stored exactly as written,
 *   so a secret containing `$` survives an import unchanged.
 * - A name given twice: the last one wins, as when a shell reads the file.
 *
 * Malformed lines are collected, not skipped: `parseDotenv` throws one
 * `DotenvSyntaxError` listing every problem with its line number.
 */

/** Environment-variable names, the same rule the server applies to secret names. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface DotenvEntry {
  name: string;
  value: string;
  /** 1-based line where the entry starts. */
  line: number;
}

export interface DotenvIssue {
  line: number;
  message: string;
}

export class DotenvSyntaxError extends Error {
  constructor(readonly issues: readonly DotenvIssue[]) {
    super(
      issues
        .slice(0, 5)
        .map((i) => `line ${i.line}: ${i.message}`)
        .join('; ') + (issues.length > 5 ? ` (and ${issues.length - 5} more)` : ''),
    );
    this.name = 'DotenvSyntaxError';
  }
}

const DOUBLE_QUOTE_ESCAPES: Record<string, string> = {
  n: '\n',
  r: '\r',
  t: '\t',
  '"': '"',
  '\\': '\\',
  $: '$',
};

/** Parses `.env` text into entries, in file order (a repeated name appears once, last value). */
export function parseDotenv(text: string): DotenvEntry[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  const entries = new Map<string, DotenvEntry>();
  const issues: DotenvIssue[] = [];

  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i]!;
    const line = raw.trimStart();
    if (line === '' || line.startsWith('#')) continue;

    const assignment = /^(?:export[ \t]+)?([^=\s]+)[ \t]*=/.exec(line);
    if (!assignment) {
      const bare = /^(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*$/.exec(line);
      issues.push({
        line: lineNo,
        message: bare ? `"${bare[1]}" has no "=" and no value` : 'expected NAME=value',
      });
      continue;
    }
    const name = assignment[1]!;
    if (!ENV_NAME.test(name)) {
      issues.push({
        line: lineNo,
        message: `"${name}" is not a valid name (letters, digits and _, not starting with a digit)`,
      });
      continue;
    }
    // Kept with its leading whitespace: `A= # note` is a comment, `A=#1` a value.
    let rest = line.slice(assignment[0].length);
    const quote = rest.trimStart()[0];

    if (quote === '"' || quote === "'" || quote === '`') {
      // Find the closing quote, possibly on a later line.
      let body = rest.trimStart().slice(1);
      let endLine = i;
      let close = findClosingQuote(body, quote);
      while (close < 0 && endLine + 1 < lines.length) {
        endLine++;
        body += `\n${lines[endLine]}`;
        close = findClosingQuote(body, quote);
      }
      if (close < 0) {
        issues.push({ line: lineNo, message: `the ${quote} quote opened here is never closed` });
        break; // everything after belongs to the unterminated value
      }
      const after = body.slice(close + 1);
      i = endLine;
      if (!/^\s*(#.*)?$/.test(after)) {
        issues.push({
          line: endLine + 1,
          message: `unexpected text after the closing ${quote} quote: "${after.trim()}"`,
        });
        continue;
      }
      const inner = body.slice(0, close);
      const value =
        quote === '"'
          ? inner.replace(/\\([\s\S])/g, (all, c: string) => DOUBLE_QUOTE_ESCAPES[c] ?? all)
          : inner;
      entries.delete(name);
      entries.set(name, { name, value, line: lineNo });
      continue;
    }

    // Unquoted: up to a comment that follows whitespace.
    const comment = /[ \t]#/.exec(rest);
    if (comment) rest = rest.slice(0, comment.index);
    const value = rest.trim();
    entries.delete(name);
    entries.set(name, { name, value, line: lineNo });
  }

  if (issues.length > 0) throw new DotenvSyntaxError(issues);
  return [...entries.values()];
}

/** Index of the quote that closes a value, skipping `\"` inside double quotes; -1 when absent. */
function findClosingQuote(body: string, quote: string): number {
  for (let j = 0; j < body.length; j++) {
    const c = body[j];
    if (quote === '"' && c === '\\') {
      j++;
      continue;
    }
    if (c === quote) return j;
  }
  return -1;
}

/** Characters a `.env` value may hold without quotes and mean the same in every dialect. */
const PLAIN_DOTENV_VALUE = /^[A-Za-z0-9_./:@%+,=^~-]+$/;

export type SecretMap = Readonly<Record<string, string>>;

const entriesOf = (secrets: SecretMap | Iterable<readonly [string, string]>) =>
  Symbol.iterator in secrets
    ? [...(secrets as Iterable<readonly [string, string]>)]
    : Object.entries(secrets as SecretMap);

/** Serializes to `.env`: plain values stay bare, anything else is double-quoted with escapes. */
export function formatDotenv(secrets: SecretMap | Iterable<readonly [string, string]>): string {
  return entriesOf(secrets)
    .map(([name, value]) => {
      checkName(name);
      if (value === '' || PLAIN_DOTENV_VALUE.test(value)) return `${name}=${value}`;
      const escaped = value
        .replace(/\\/g, '\\\\')
        .replace(/"/g, '\\"')
        .replace(/\$/g, '\\$')
        .replace(/\n/g, '\\n')
        .replace(/\r/g, '\\r')
        .replace(/\t/g, '\\t');
      return `${name}="${escaped}"`;
    })
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * Serializes to POSIX shell: `export NAME='value'` lines for `eval` or `source`.
 * Single quotes keep every character literal (newlines included); a `'` inside
 * is written `'\''`.
 */
export function formatShell(secrets: SecretMap | Iterable<readonly [string, string]>): string {
  return entriesOf(secrets)
    .map(([name, value]) => {
      checkName(name);
      return `export ${name}='${value.replace(/'/g, `'\\''`)}'\n`;
    })
    .join('');
}

/**
 * Serializes to YAML: a mapping of double-quoted keys to double-quoted values.
 * JSON string syntax is valid YAML double-quoted scalar syntax, and quoting the
 * keys too keeps names like `ON`, `NO` or `Y` from turning into booleans in
 * YAML 1.1 readers.
 */
export function formatYaml(secrets: SecretMap | Iterable<readonly [string, string]>): string {
  const entries = entriesOf(secrets);
  if (entries.length === 0) return '{}\n';
  return entries
    .map(([name, value]) => {
      checkName(name);
      return `${JSON.stringify(name)}: ${JSON.stringify(value)}\n`;
    })
    .join('');
}

/** Serializes to a JSON object `{ "NAME": "value" }`, two-space indented. */
export function formatJson(secrets: SecretMap | Iterable<readonly [string, string]>): string {
  const object: Record<string, string> = {};
  for (const [name, value] of entriesOf(secrets)) {
    checkName(name);
    object[name] = value;
  }
  return `${JSON.stringify(object, null, 2)}\n`;
}

/**
 * Parses a JSON object of names to values. Strings are taken as they are;
 * numbers and booleans are written as JSON writes them; anything else (null,
 * arrays, objects) is an error naming the key.
 */
export function parseJsonSecrets(text: string): Array<{ name: string; value: string }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new SyntaxError(`Not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SyntaxError('Expected a JSON object of names to values');
  }
  const problems: string[] = [];
  const out: Array<{ name: string; value: string }> = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (!ENV_NAME.test(name)) problems.push(`"${name}" is not a valid name`);
    else if (typeof value === 'string') out.push({ name, value });
    else if (typeof value === 'number' || typeof value === 'boolean')
      out.push({ name, value: JSON.stringify(value) });
    else problems.push(`"${name}" must be a string, number or boolean`);
  }
  if (problems.length > 0) throw new SyntaxError(problems.join('; '));
  return out;
}

function checkName(name: string): void {
  if (!ENV_NAME.test(name)) throw new TypeError(`"${name}" is not a valid variable name`);
}
