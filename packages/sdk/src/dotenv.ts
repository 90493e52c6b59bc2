/**
 * `.env` files and the other text forms secrets are imported from and exported
 * to (JSON, YAML, POSIX shell). Pure functions; no I/O, no crypto.
 *
 * Two readers decide what a `.env` file means: the npm `dotenv` package (its
 * default parser and its `fast` one) and python-dotenv (`dotenv_values(path)`
 * with its default `interpolate=True`). They agree on plain values and differ
 * on escapes, on `#` and on `${VAR}`, so both directions name a dialect:
 * `'both'` (the default: what both read alike), `'node'` or `'python'`.
 *
 * Writing (`formatDotenv`) picks, per value, the first of these that the
 * dialect's readers read back byte for byte, and otherwise throws a
 * `DotenvValueError` naming the secret:
 *
 * - bare `NAME=value`: no `#`, no line break, no quote first, no whitespace at
 *   either end (an empty value is `NAME=`);
 * - `"double"` quotes, where a line feed is written `\n` and a carriage return
 *   `\r` (the two escapes both readers decode). For both readers the value
 *   holds no `"` and no backslash that python-dotenv would decode (before
 *   `\ ' " a b f n r t v`, a line break or the end) or that older Coffer
 *   exports meant as an escape (`\$`); npm dotenv alone only minds `\n` and
 *   `\r`; python-dotenv alone gets `\\` and `\"` escapes, so any value fits;
 * - `'single'` quotes, literal in npm dotenv: no `'`, no carriage return, and
 *   for python-dotenv's sake no `\\`;
 * - `` `backticks` `` (npm dotenv only): no backtick, no carriage return.
 *
 * No quoted value may end with a backslash: python-dotenv then loses that
 * line and the next. python-dotenv substitutes `${VAR}` (and `${VAR:-x}`)
 * inside every kind of quotes, with no escape, so such a value is refused for
 * it. A NUL is refused everywhere: no environment variable can hold one.
 *
 * Reading (`parseDotenv`):
 *
 * - `NAME=value` per line; blank lines and lines starting with `#` are
 *   ignored; an optional `export ` prefix and spaces around `=` are accepted.
 *   CRLF and CR line ends read as LF, as both readers do.
 * - A value starting with a quote ends at the first same quote not preceded
 *   by a backslash, possibly on a later line; only whitespace and a `# comment`
 *   may follow it. Backticks are quotes for npm dotenv, not python-dotenv.
 * - What the quotes mean: `'single'` and `` `backtick` `` are literal for npm
 *   dotenv, and npm dotenv decodes only `\n` and `\r` in `"double"` quotes.
 *   python-dotenv decodes `\\` and `\'` in single quotes and `\\ \' \" \a \b
 *   \f \n \r \t \v` in double quotes; other backslashes stay.
 * - Bare values: npm dotenv ends them at any `#`, python-dotenv at whitespace
 *   followed by `#` (so `A= # note` is `# note` to it); both trim.
 * - `${VAR}` and `$VAR` are never expanded: Coffer stores values exactly as
 *   written, as npm dotenv reads them (python-dotenv would substitute `${VAR}`
 *   when it loads the file; the writer never emits one for it).
 * - A name given twice: the last one wins, as in both readers.
 *
 * The dialect `'both'` reads each value as both readers would and refuses it
 * when they differ (`A=x#1`, `A="\\"`, backticks, ...), and also refuses `\$`
 * in double quotes: both readers keep the backslash, while shells and older
 * Coffer exports meant `$`. `'node'` and `'python'` read as that reader does.
 * In every dialect: a line without `=`, an invalid name, an unclosed quote,
 * text after a closing quote, a U+2028/U+2029 outside quotes (a line break to
 * npm dotenv only), and `A=` followed by a line starting with a quote (npm
 * dotenv takes that line as A's value) are refused. Problems are collected,
 * not skipped: `parseDotenv` throws one `DotenvSyntaxError` listing every
 * problem with its line number.
 */

/** Environment-variable names, the same rule the server applies to secret names. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Which reader a `.env` file is for: both the npm `dotenv` package and python-dotenv, or one. */
export type DotenvDialect = 'both' | 'node' | 'python';

export const DOTENV_DIALECTS: readonly DotenvDialect[] = ['both', 'node', 'python'];

export interface DotenvOptions {
  /** Default `'both'`. */
  dialect?: DotenvDialect;
}

const READERS: Record<DotenvDialect, string> = {
  both: 'npm dotenv and python-dotenv',
  node: 'npm dotenv',
  python: 'python-dotenv',
};

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

/** A secret whose value an export format cannot carry exactly; names the secret, never the value. */
export class UnwritableValueError extends Error {
  constructor(
    readonly secretName: string,
    readonly reason: string,
    message = `${secretName} cannot be exported: ${reason}`,
  ) {
    super(message);
    this.name = 'UnwritableValueError';
  }
}

/** A secret whose value no quoting lets the dialect's readers read back exactly. */
export class DotenvValueError extends UnwritableValueError {
  constructor(
    secretName: string,
    readonly dialect: DotenvDialect,
    reason: string,
  ) {
    super(
      secretName,
      reason,
      `${secretName} cannot be written to a .env file that ${READERS[dialect]} read exactly: ${reason}`,
    );
    this.name = 'DotenvValueError';
  }
}

// Whitespace as JavaScript's trim() and python's str.strip() see it.
const JS_SPACE = '\\s';
const PY_SPACE =
  '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_LEADING_SPACE = new RegExp(`^[${PY_SPACE}]+`);
const PY_TRAILING_SPACE = new RegExp(`[${PY_SPACE}]+$`);
const PY_COMMENT = new RegExp(`[${PY_SPACE}]+#.*`, 's');
const EDGE_SPACE = new RegExp(`^(?:${JS_SPACE}|[${PY_SPACE}])|(?:${JS_SPACE}|[${PY_SPACE}])$`);

/** What python-dotenv substitutes (its `_posix_variable`), in any quotes. */
const PY_VARIABLE = /\$\{[^}:]*(?::-[^}]*)?\}/;

const PY_DOUBLE_QUOTE_ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

type Quote = '"' | "'" | '`';

/** The value npm dotenv reads (lib/main.js: bare values end at any `#`; only `\n` and `\r` in double quotes). */
function nodeValue(quote: Quote | undefined, body: string): string {
  const unescape = (s: string) => s.replace(/\\n/g, '\n').replace(/\\r/g, '\r');
  if (quote === '"') return unescape(body);
  if (quote !== undefined) return body;
  const hash = body.indexOf('#');
  const trimmed = (hash < 0 ? body : body.slice(0, hash)).trim();
  // Quotes at both ends go, and a leading double quote still means escapes.
  const value = trimmed.replace(/^(['"`])([\s\S]*)\1$/gm, '$2');
  return trimmed.startsWith('"') ? unescape(value) : value;
}

/** The value python-dotenv's parser reads, before its `${VAR}` substitution. */
function pythonValue(quote: Quote | undefined, body: string): string {
  if (quote === '"')
    return body.replace(/\\[\\'"abfnrtv]/g, (e) => PY_DOUBLE_QUOTE_ESCAPES[e[1]!]!);
  if (quote === "'") return body.replace(/\\[\\']/g, (e) => e[1]!);
  // Backticks are no quotes to python-dotenv: the line is a bare value.
  const bare = quote === '`' ? `\`${body}\`` : body;
  return bare.replace(PY_LEADING_SPACE, '').replace(PY_COMMENT, '').replace(PY_TRAILING_SPACE, '');
}

/** Why both readers' values differ, in words a user can act on. */
function disagreement(quote: Quote | undefined, body: string): string {
  if (quote === '`') return 'python-dotenv does not treat backticks as quotes';
  if (quote === "'")
    return "python-dotenv decodes \\\\ and \\' in single quotes, npm dotenv keeps them";
  if (quote === '"')
    return 'python-dotenv decodes backslash escapes in double quotes that npm dotenv keeps (it decodes only \\n and \\r)';
  if (/^[ \t]*#/.test(body))
    return 'npm dotenv reads an empty value, python-dotenv the "#" text after it';
  if (body.includes('#'))
    return 'npm dotenv ends a bare value at any "#", python-dotenv only at whitespace and "#"';
  return 'npm dotenv and python-dotenv trim different whitespace';
}

const AFTER_CLOSING_QUOTE = /^[ \t]*(?:#.*)?$/;
const LINE_SEPARATORS = /[\u2028\u2029]/;

/** Parses `.env` text into entries, in file order (a repeated name appears once, last value). */
export function parseDotenv(text: string, options: DotenvOptions = {}): DotenvEntry[] {
  const dialect = options.dialect ?? 'both';
  const quotes = dialect === 'python' ? `'"` : `'"\``;
  const t = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const entries = new Map<string, DotenvEntry>();
  const issues: DotenvIssue[] = [];
  const set = (name: string, value: string, line: number) => {
    entries.delete(name);
    entries.set(name, { name, value, line });
  };

  let pos = 0;
  let lineNo = 0;
  while (pos <= t.length) {
    lineNo++;
    const eol = t.indexOf('\n', pos);
    const lineEnd = eol < 0 ? t.length : eol;
    const raw = t.slice(pos, lineEnd);
    const start = pos;
    pos = lineEnd + 1;
    const line = raw.replace(/^[ \t]+/, '');
    if (line === '' || line.startsWith('#')) {
      if (dialect !== 'python' && LINE_SEPARATORS.test(line))
        issues.push({
          line: lineNo,
          message: 'a U+2028/U+2029 outside quotes is a line break to npm dotenv',
        });
      continue;
    }

    const assignment = /^(?:export[ \t]+)?([^=\s]+)[ \t]*=[ \t]*/.exec(line);
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
    const valueStart = start + (raw.length - line.length) + assignment[0].length;
    const rest = t.slice(valueStart, lineEnd);
    const quote = quotes.includes(rest[0] ?? '') ? (rest[0] as Quote) : undefined;
    if (/^\s/.test(rest) || PY_LEADING_SPACE.test(rest)) {
      // The readers skip different whitespace before a quote.
      issues.push({ line: lineNo, message: 'whitespace other than spaces and tabs after "="' });
      continue;
    }

    if (quote === undefined) {
      if (dialect !== 'python' && LINE_SEPARATORS.test(rest)) {
        issues.push({
          line: lineNo,
          message: 'a U+2028/U+2029 outside quotes is a line break to npm dotenv',
        });
        continue;
      }
      // npm dotenv's pattern lets `A=` take a quoted value from a later line.
      if (rest === '' && `'"\``.includes(t.slice(pos).trimStart()[0] ?? '\n')) {
        issues.push({
          line: lineNo,
          message: `nothing after "=", and the next line starts with a quote: npm dotenv reads it as ${name}'s value`,
        });
        continue;
      }
      addValue(name, undefined, rest, lineNo);
      continue;
    }

    const close = closingQuote(t, valueStart, quote, dialect);
    if (dialect === 'node' && !closesCleanly(t, close)) {
      // npm dotenv then reads the line as a bare value: `A="it's "x""` is `it's "x"`.
      if (LINE_SEPARATORS.test(rest))
        issues.push({
          line: lineNo,
          message: 'a U+2028/U+2029 outside quotes is a line break to npm dotenv',
        });
      else addValue(name, undefined, rest, lineNo);
      continue;
    }
    if (close < 0) {
      issues.push({
        line: lineNo,
        message: `the ${quote} quote opened here is never closed${t.slice(valueStart + 1).includes(`\\${quote}`) ? ` (a backslash before a ${quote} keeps it from closing the value)` : ''}`,
      });
      break; // everything after belongs to the unterminated value
    }
    const closeEol = t.indexOf('\n', close);
    const closeLineEnd = closeEol < 0 ? t.length : closeEol;
    const body = t.slice(valueStart + 1, close);
    const endLine = lineNo + countLineFeeds(body);
    const after = t.slice(close + 1, closeLineEnd);
    pos = closeLineEnd + 1;
    if (!AFTER_CLOSING_QUOTE.test(after) || (dialect !== 'python' && LINE_SEPARATORS.test(after))) {
      issues.push({
        line: endLine,
        message: `unexpected text after the closing ${quote} quote: "${after.trim()}"`,
      });
      lineNo = endLine;
      continue;
    }
    addValue(name, quote, body, lineNo);
    lineNo = endLine;
  }

  function addValue(name: string, quote: Quote | undefined, body: string, line: number) {
    if (dialect === 'node') return set(name, nodeValue(quote, body), line);
    if (dialect === 'python') return set(name, pythonValue(quote, body), line);
    const value = nodeValue(quote, body);
    if (value !== pythonValue(quote, body)) {
      issues.push({
        line,
        message: `npm dotenv and python-dotenv read ${name} differently: ${disagreement(quote, body)}; quote it another way, or read the file as the dialect it was written for`,
      });
    } else if (quote === '"' && body.includes('\\$')) {
      issues.push({
        line,
        message: `"\\$" in ${name}: npm dotenv and python-dotenv keep the backslash, but shells and older Coffer exports mean "$"; read the file as the dialect it was written for`,
      });
    } else set(name, value, line);
  }

  if (issues.length > 0) throw new DotenvSyntaxError(issues);
  return [...entries.values()];
}

/**
 * Where the value quoted at `open` ends. Both readers first try the first same
 * quote with no backslash before it; when other text follows that one on its
 * line, npm dotenv backs up to the latest backslash-quote before it that ends a
 * line (`A='C:\\'`), where python-dotenv fails.
 */
function closingQuote(t: string, open: number, quote: Quote, dialect: DotenvDialect): number {
  const escaped: number[] = [];
  let first = -1;
  for (let j = open + 1; j < t.length; j++) {
    if (t[j] !== quote) continue;
    if (t[j - 1] !== '\\') {
      first = j;
      break;
    }
    escaped.push(j);
  }
  if (dialect !== 'node') return first;
  return [first, ...escaped.reverse()].find((j) => closesCleanly(t, j)) ?? first;
}

/** Whether only whitespace and a comment follow the quote at `close` on its line. */
function closesCleanly(t: string, close: number): boolean {
  if (close < 0) return false;
  const eol = t.indexOf('\n', close);
  return AFTER_CLOSING_QUOTE.test(t.slice(close + 1, eol < 0 ? t.length : eol));
}

function countLineFeeds(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

export type SecretMap = Readonly<Record<string, string>>;

const entriesOf = (secrets: SecretMap | Iterable<readonly [string, string]>) =>
  Symbol.iterator in secrets
    ? [...(secrets as Iterable<readonly [string, string]>)]
    : Object.entries(secrets as SecretMap);

/** Why a value cannot go bare, or undefined when it can. */
function bareProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.includes('#')) return 'it has a "#"';
  if (/[\n\r\u2028\u2029]/.test(value)) return 'it spans lines';
  if (/^['"`]/.test(value)) return 'it starts with a quote';
  if (EDGE_SPACE.test(value)) return 'it has whitespace at an end';
  return undefined;
}

/** Why a value cannot go in double quotes for the dialect, or undefined when it can. */
function doubleQuoteProblem(value: string, dialect: DotenvDialect): string | undefined {
  if (value.endsWith('\\')) return 'it ends with a backslash';
  if (dialect === 'python') return undefined;
  if (value.includes('"')) return 'it has a "';
  const decoded = dialect === 'both' ? /\\[\\'"abfnrtv$\n\r]/ : /\\[nr\n\r]/;
  const escape = decoded.exec(value);
  if (escape) return `it has a backslash before ${JSON.stringify(escape[0][1])}`;
  return undefined;
}

/** Why a value cannot go in single quotes (or backticks) for the dialect, or undefined when it can. */
function literalQuoteProblem(
  value: string,
  quote: "'" | '`',
  dialect: DotenvDialect,
): string | undefined {
  if (value.includes(quote)) return `it has a ${quote}`;
  if (value.includes('\r')) return 'it has a carriage return (read back as a line feed)';
  // Only npm dotenv finds the end of 'C:\\' (python-dotenv loses this line and the next).
  if (dialect !== 'node' && value.endsWith('\\')) return 'it ends with a backslash';
  if (dialect === 'both' && value.includes('\\\\')) return 'it has two backslashes in a row';
  return undefined;
}

/** The value as the dialect's readers read it back exactly, or why it cannot be. */
function encodeDotenvValue(
  value: string,
  dialect: DotenvDialect,
): { text: string } | { problem: string } {
  if (value.includes('\0'))
    return { problem: 'it has a NUL character, which no environment variable can hold' };
  if (/[\ud800-\udfff]/u.test(value))
    return { problem: 'it has an unpaired UTF-16 surrogate, which UTF-8 cannot carry' };
  if (dialect !== 'node' && PY_VARIABLE.test(value))
    return {
      problem: 'python-dotenv replaces its "${...}" with another variable\'s value, in any quotes',
    };
  const bare = bareProblem(value);
  if (bare === undefined) return { text: value };
  const double = doubleQuoteProblem(value, dialect);
  if (double === undefined) {
    const escaped = dialect === 'python' ? value.replace(/[\\"]/g, '\\$&') : value;
    return { text: `"${escaped.replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"` };
  }
  const single = literalQuoteProblem(value, "'", dialect);
  if (single === undefined) return { text: `'${value}'` };
  const tried = [`bare: ${bare}`, `double quotes: ${double}`, `single quotes: ${single}`];
  if (dialect === 'node') {
    const backtick = literalQuoteProblem(value, '`', dialect);
    if (backtick === undefined) return { text: `\`${value}\`` };
    tried.push(`backticks: ${backtick}`);
    // A line npm dotenv cannot read as quoted it reads bare, then drops the outer quotes.
    const lenient = doubleQuoteProblem(value.replace(/"/g, ''), dialect);
    if (!/[#\u2028\u2029]/.test(value) && value.includes('"') && lenient === undefined)
      return { text: `"${value.replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"` };
  }
  return { problem: `no quoting fits (${tried.join('; ')})` };
}

/**
 * Serializes to `.env` for the dialect's readers (default: both npm dotenv and
 * python-dotenv), choosing per value the quoting they read back exactly.
 * Throws a `DotenvValueError` naming the first secret none fits.
 */
export function formatDotenv(
  secrets: SecretMap | Iterable<readonly [string, string]>,
  options: DotenvOptions = {},
): string {
  const dialect = options.dialect ?? 'both';
  return entriesOf(secrets)
    .map(([name, value]) => {
      checkName(name);
      const encoded = encodeDotenvValue(value, dialect);
      if ('problem' in encoded) throw new DotenvValueError(name, dialect, encoded.problem);
      return `${name}=${encoded.text}\n`;
    })
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
      if (value.includes('\0'))
        throw new UnwritableValueError(
          name,
          'it has a NUL character, which no shell variable can hold',
        );
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

/** Why a value cannot travel as UTF-8 text in an environment variable, or undefined. */
function environmentValueProblem(value: string): string | undefined {
  if (value.includes('\0')) return 'it has a NUL character, which no environment variable can hold';
  if (/[\ud800-\udfff]/u.test(value))
    return 'it has an unpaired UTF-16 surrogate, which UTF-8 cannot carry';
  return undefined;
}

export interface GithubEnvOptions {
  /**
   * Draws the delimiter of a multi-line value; drawn again while the value
   * contains it. Default: `ghadelimiter_` and 32 random hex digits, as
   * GitHub's own `@actions/core` writes.
   */
  delimiter?: () => string;
}

function randomDelimiter(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  return `ghadelimiter_${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * Serializes to what a GitHub Actions runner reads from the file named by
 * `$GITHUB_ENV`: `NAME=value` for a value without a line feed or carriage
 * return, otherwise `NAME<<DELIMITER`, the value, and `DELIMITER` on lines of
 * their own, where the delimiter is random and not contained in the value.
 * The runner (Linux and macOS) reads every value back exactly; a Windows
 * runner also ends a line at CRLF, so there a carriage return just before a
 * line feed or at the end of a multi-line value is lost. A NUL or an unpaired
 * surrogate throws an `UnwritableValueError` naming the secret.
 */
export function formatGithubEnv(
  secrets: SecretMap | Iterable<readonly [string, string]>,
  options: GithubEnvOptions = {},
): string {
  const draw = options.delimiter ?? randomDelimiter;
  return entriesOf(secrets)
    .map(([name, value]) => {
      checkName(name);
      const problem = environmentValueProblem(value);
      if (problem) throw new UnwritableValueError(name, problem);
      if (!/[\r\n]/.test(value)) return `${name}=${value}\n`;
      for (let attempt = 0; attempt < 100; attempt++) {
        const delimiter = draw();
        if (delimiter === '' || /[\r\n]/.test(delimiter))
          throw new TypeError('a GITHUB_ENV delimiter must be one non-empty line');
        if (!value.includes(delimiter)) return `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
      }
      throw new Error(`no delimiter found that ${name}'s value does not contain`);
    })
    .join('');
}

/**
 * `::add-mask::` workflow commands that make a GitHub Actions runner hide
 * every value in the job's log from then on. The runner masks line by line,
 * so a multi-line value gets one command per line (split at LF, CRLF and
 * CR); empty and whitespace-only lines are skipped (the runner refuses to
 * mask them). In the command's data `%`, CR and LF are written `%25`, `%0D`
 * and `%0A`, the escapes the runner decodes. Each line is masked once.
 */
export function formatGithubMasks(
  secrets: SecretMap | Iterable<readonly [string, string]>,
): string {
  const lines = new Set<string>();
  for (const [name, value] of entriesOf(secrets)) {
    checkName(name);
    const problem = environmentValueProblem(value);
    if (problem) throw new UnwritableValueError(name, problem);
    for (const line of value.split(/\r\n|\r|\n/)) if (line.trim() !== '') lines.add(line);
  }
  const escape = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  return [...lines].map((line) => `::add-mask::${escape(line)}\n`).join('');
}

/** A Kubernetes object name: a DNS-1123 subdomain (lower-case letters, digits, `-` and `.`; at most 253). */
export function isDns1123Subdomain(name: string): boolean {
  return (
    name.length <= 253 &&
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name)
  );
}

/** A Kubernetes namespace: a DNS-1123 label (lower-case letters, digits and `-`; at most 63). */
export function isDns1123Label(name: string): boolean {
  return name.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name);
}

export interface KubernetesSecretOptions {
  /** `metadata.name`, a DNS-1123 subdomain. */
  name: string;
  /** `metadata.namespace`, a DNS-1123 label; omitted: the namespace `kubectl` applies it to. */
  namespace?: string;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Standard base64 with padding, as Kubernetes decodes `data`. */
function base64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out +=
      BASE64[(n >> 18) & 63]! +
      BASE64[(n >> 12) & 63]! +
      (i + 1 < bytes.length ? BASE64[(n >> 6) & 63]! : '=') +
      (i + 2 < bytes.length ? BASE64[n & 63]! : '=');
  }
  return out;
}

/**
 * Serializes to a Kubernetes `Secret` manifest (YAML: `apiVersion: v1`,
 * `kind: Secret`, `type: Opaque`) whose `data` holds each value's UTF-8 bytes
 * in base64, for `kubectl apply -f -`. Names and strings are JSON-quoted,
 * which YAML reads as the same strings (a name like `true` or `123` stays a
 * string). Throws a `TypeError` for a name or namespace Kubernetes refuses,
 * and an `UnwritableValueError` for a value with an unpaired surrogate.
 */
export function formatKubernetesSecret(
  secrets: SecretMap | Iterable<readonly [string, string]>,
  options: KubernetesSecretOptions,
): string {
  if (!isDns1123Subdomain(options.name))
    throw new TypeError(
      `"${options.name}" is not a valid Secret name: lower-case letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters`,
    );
  if (options.namespace !== undefined && !isDns1123Label(options.namespace))
    throw new TypeError(
      `"${options.namespace}" is not a valid namespace: lower-case letters, digits and "-", starting and ending with a letter or digit, at most 63 characters`,
    );
  const encoder = new TextEncoder();
  const data = entriesOf(secrets).map(([name, value]) => {
    checkName(name);
    if (/[\ud800-\udfff]/u.test(value))
      throw new UnwritableValueError(
        name,
        'it has an unpaired UTF-16 surrogate, which UTF-8 cannot carry',
      );
    return `  ${JSON.stringify(name)}: ${JSON.stringify(base64(encoder.encode(value)))}\n`;
  });
  return [
    'apiVersion: v1\n',
    'kind: Secret\n',
    'metadata:\n',
    `  name: ${JSON.stringify(options.name)}\n`,
    ...(options.namespace !== undefined
      ? [`  namespace: ${JSON.stringify(options.namespace)}\n`]
      : []),
    'type: Opaque\n',
    data.length === 0 ? 'data: {}\n' : 'data:\n',
    ...data,
  ].join('');
}
