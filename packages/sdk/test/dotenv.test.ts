import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import {
  DotenvSyntaxError,
  DotenvValueError,
  formatDotenv,
  formatJson,
  formatShell,
  formatYaml,
  parseDotenv,
  parseJsonSecrets,
  type DotenvDialect,
} from '../src/dotenv.js';

const parsed = (text: string, dialect?: DotenvDialect) =>
  Object.fromEntries(parseDotenv(text, { dialect }).map((e) => [e.name, e.value]));

function issuesOf(text: string, dialect?: DotenvDialect) {
  try {
    parseDotenv(text, { dialect });
  } catch (err) {
    assert.ok(err instanceof DotenvSyntaxError);
    return err.issues;
  }
  assert.fail('expected a DotenvSyntaxError');
}

/** Values that break naive quoting. */
const TRICKY = [
  '',
  'plain',
  'with space',
  '  leading and trailing  ',
  'quote " double',
  "quote ' single",
  'back`tick',
  'back\\slash \\n not a newline',
  'dollar $HOME ${HOME} $(id) `id`',
  'hash # not a comment',
  'hash#inside',
  '#starts with hash',
  'multi\nline\nvalue',
  'crlf\r\nline',
  'tab\there',
  'equals=sign==',
  'unicode ✓ é 日本',
  '\\',
  '"',
  "'",
  '\\"',
  "it's a \"mix\" of 'quotes' and \\ and $",
  'ends with backslash\\',
  '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n',
];

describe('parseDotenv', () => {
  it('reads assignments, comments, blank lines, export prefixes and spaces around =', () => {
    const text = [
      '# a comment',
      '',
      'PLAIN=value',
      'export EXPORTED=yes',
      'export   SPACED  =  spaced value  ',
      '  INDENTED=1',
      'EMPTY=',
      'EMPTY_QUOTED=""',
      'URL=postgres://user:p@ss@host:5432/db?sslmode=require&x=1',
      '\t# indented comment',
    ].join('\n');
    assert.deepEqual(parsed(text), {
      PLAIN: 'value',
      EXPORTED: 'yes',
      SPACED: 'spaced value',
      INDENTED: '1',
      EMPTY: '',
      EMPTY_QUOTED: '',
      URL: 'postgres://user:p@ss@host:5432/db?sslmode=require&x=1',
    });
  });

  it('ends a bare value at whitespace and #, and refuses a # the two readers read differently', () => {
    assert.deepEqual(parsed('A=value # comment\nE=x\t# tab comment\nF=\nG="#quoted" # c'), {
      A: 'value',
      E: 'x',
      F: '',
      G: '#quoted',
    });
    const text = 'A=ok\nB=abc#123\nC=#notcomment\nD= # only a comment';
    assert.deepEqual(
      issuesOf(text).map((i) => i.line),
      [2, 3, 4],
    );
    assert.match(issuesOf(text)[0]!.message, /npm dotenv ends a bare value at any "#"/);
    assert.deepEqual(parsed(text, 'node'), { A: 'ok', B: 'abc', C: '', D: '' });
    assert.deepEqual(parsed(text, 'python'), {
      A: 'ok',
      B: 'abc#123',
      C: '#notcomment',
      D: '# only a comment',
    });
  });

  it('keeps single-quoted values literally, and backticks only for npm dotenv', () => {
    assert.deepEqual(parsed('A=\'a \\n b $HOME "q" # not comment\' # comment'), {
      A: 'a \\n b $HOME "q" # not comment',
    });
    const backticks = 'B=`x \'y\' "z"`';
    assert.match(
      issuesOf(backticks)[0]!.message,
      /python-dotenv does not treat backticks as quotes/,
    );
    assert.deepEqual(parsed(backticks, 'node'), { B: `x 'y' "z"` });
    assert.deepEqual(parsed(backticks, 'python'), { B: '`x \'y\' "z"`' });
    // python-dotenv decodes \\ and \' in single quotes, npm dotenv does not.
    const escapes = String.raw`S='a\\b \'q'`;
    assert.deepEqual(parsed(escapes, 'python'), { S: "a\\b 'q" });
    assert.deepEqual(parsed(String.raw`S='a\\b'`, 'node'), { S: String.raw`a\\b` });
    assert.equal(issuesOf(String.raw`S='a\\b'`)[0]!.line, 1);
  });

  it('decodes double-quote escapes as each reader does, and refuses them when they differ', () => {
    const text = String.raw`A="l1\nl2\tt\r \"q\" \\ \$HOME \q"`;
    assert.equal(parsed(text, 'node').A, 'l1\nl2\\tt\r \\"q\\" \\\\ \\$HOME \\q');
    assert.equal(parsed(text, 'python').A, 'l1\nl2\tt\r "q" \\ \\$HOME \\q');
    assert.match(issuesOf(text)[0]!.message, /python-dotenv decodes backslash escapes/);
    // Both agree on \n, \r and a backslash before other letters.
    assert.equal(parsed(String.raw`A="l1\nl2\rx \q"`).A, 'l1\nl2\rx \\q');
    // Both keep the backslash of \$, which older Coffer exports meant as "$": refused.
    assert.match(issuesOf(String.raw`A="pa\$\$word"`)[0]!.message, /older Coffer exports/);
    assert.equal(parsed(String.raw`A="pa\$\$word"`, 'node').A, String.raw`pa\$\$word`);
  });

  it('reads a quoted line npm dotenv cannot close as it does: bare, outer quotes dropped', () => {
    const text = String.raw`A="it's "x"\r"` + '\n' + String.raw`B='C:\'` + "\nC='y'";
    assert.deepEqual(parsed(text, 'node'), { A: 'it\'s "x"\r', B: 'C:\\', C: 'y' });
    assert.match(issuesOf(text)[0]!.message, /after the closing/);
    assert.match(issuesOf(text, 'python')[0]!.message, /after the closing/);
  });

  it('refuses A= followed by a quoted line, which npm dotenv reads as A', () => {
    const issues = issuesOf("A=\n'x'\n");
    assert.equal(issues[0]!.line, 1);
    assert.match(issues[0]!.message, /npm dotenv reads it as A's value/);
  });

  it('does not expand ${VAR} or $VAR', () => {
    assert.deepEqual(parsed('A=1\nB=${A}\nC="$A and ${A}"\nD=\'${A}\''), {
      A: '1',
      B: '${A}',
      C: '$A and ${A}',
      D: '${A}',
    });
  });

  it('reads double-quoted values over several lines and keeps later line numbers right', () => {
    const entries = parseDotenv('KEY="-----BEGIN-----\nabc\n-----END-----"\nNEXT=after\n');
    assert.deepEqual(entries, [
      { name: 'KEY', value: '-----BEGIN-----\nabc\n-----END-----', line: 1 },
      { name: 'NEXT', value: 'after', line: 4 },
    ]);
    assert.equal(parsed("S='one\ntwo'").S, 'one\ntwo');
  });

  it('accepts CRLF and CR line endings and a byte-order mark', () => {
    assert.deepEqual(parsed('\uFEFFA=1\r\nB="x\r\ny"\rC=3'), { A: '1', B: 'x\ny', C: '3' });
  });

  it('lets the last of a repeated name win', () => {
    const entries = parseDotenv('A=1\nB=2\nA=3');
    assert.deepEqual(
      entries.map((e) => [e.name, e.value, e.line]),
      [
        ['B', '2', 2],
        ['A', '3', 3],
      ],
    );
  });

  it('reports every malformed line with its number', () => {
    const issues = issuesOf(
      ['OK=1', '1BAD=x', 'NO_EQUALS', 'A-B=x', 'GOOD=2', 'Q="x" trailing', 'just some words'].join(
        '\n',
      ),
    );
    assert.deepEqual(
      issues.map((i) => i.line),
      [2, 3, 4, 6, 7],
    );
    assert.match(issues[0]!.message, /1BAD/);
    assert.match(issues[1]!.message, /NO_EQUALS/);
    assert.match(issues[3]!.message, /after the closing/);
  });

  it('reports an unterminated quote at the line that opened it', () => {
    const issues = issuesOf('A=1\nB="never closed\nC=3\n');
    assert.deepEqual(issues, [{ line: 2, message: 'the " quote opened here is never closed' }]);
    assert.equal(issuesOf("X='open").at(0)!.line, 1);
    // An escaped quote does not close a double-quoted value.
    assert.equal(issuesOf('X="a\\"').at(0)!.line, 1);
  });

  it('the error message names the lines', () => {
    assert.throws(() => parseDotenv('A=1\n2=x'), /line 2/);
  });
});

describe('formatDotenv', () => {
  it('round-trips every tricky value it writes through parseDotenv, in each dialect', () => {
    for (const dialect of ['both', 'node', 'python'] as const) {
      const secrets: Record<string, string> = {};
      for (const [i, value] of TRICKY.entries()) {
        try {
          formatDotenv({ [`K${i}`]: value }, { dialect });
          secrets[`K${i}`] = value;
        } catch (err) {
          assert.ok(err instanceof DotenvValueError, String(err));
        }
      }
      assert.ok(Object.keys(secrets).length >= TRICKY.length - 3, dialect);
      assert.deepEqual(parsed(formatDotenv(secrets, { dialect }), dialect), secrets, dialect);
    }
  });

  it('leaves plain values bare and picks the quotes both readers read back', () => {
    assert.equal(
      formatDotenv({
        A: 'simple-value_1.2',
        B: 'has space',
        C: '',
        D: 'pa$$word',
        E: ' padded',
        F: 'say "hi" #1',
        G: 'two\nlines',
      }),
      'A=simple-value_1.2\nB=has space\nC=\nD=pa$$word\nE=" padded"\nF=\'say "hi" #1\'\nG="two\\nlines"\n',
    );
  });

  it('names the secret it cannot write, and writes it for the one reader that can read it', () => {
    const secrets = { OK: 'x', MIXED: `it's "x" # y` };
    assert.throws(
      () => formatDotenv(secrets),
      (err: unknown) =>
        err instanceof DotenvValueError &&
        err.secretName === 'MIXED' &&
        /^MIXED cannot be written .* npm dotenv and python-dotenv/.test(err.message),
    );
    assert.equal(formatDotenv(secrets, { dialect: 'node' }), 'OK=x\nMIXED=`it\'s "x" # y`\n');
    assert.equal(formatDotenv(secrets, { dialect: 'python' }), 'OK=x\nMIXED="it\'s \\"x\\" # y"\n');
    assert.throws(
      () => formatDotenv({ V: '${HOME}' }, { dialect: 'python' }),
      /python-dotenv replaces/,
    );
    assert.equal(formatDotenv({ V: '${HOME}' }, { dialect: 'node' }), 'V=${HOME}\n');
    assert.throws(() => formatDotenv({ Z: 'a\0b' }, { dialect: 'node' }), /Z cannot .* NUL/);
  });

  it('refuses invalid names', () => {
    assert.throws(() => formatDotenv({ 'BAD-NAME': 'x' }), /not a valid variable name/);
  });
});

describe('formatShell', () => {
  it('produces a script that sets exactly these values in a real POSIX shell', () => {
    const secrets = Object.fromEntries(TRICKY.map((v, i) => [`K${i}`, v]));
    const script = formatShell(secrets);
    for (const [name, value] of Object.entries(secrets)) {
      const out = execFileSync('sh', ['-c', `${script}\nprintf '%s' "$${name}"`], {
        encoding: 'utf8',
      });
      assert.equal(out, value, name);
    }
    // Exported, so child processes see them.
    const child = execFileSync(
      'sh',
      ['-c', `${formatShell({ CHILD_SEES: 'x y' })}sh -c 'printf %s "$CHILD_SEES"'`],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(child, 'x y');
  });
});

describe('formatYaml', () => {
  it('parses back to the same strings in YAML 1.2 and 1.1, even for names like ON and NO', () => {
    const secrets: Record<string, string> = Object.fromEntries(TRICKY.map((v, i) => [`K${i}`, v]));
    Object.assign(secrets, { ON: 'yes', NO: 'off', Y: 'true', NULL: 'null', N: '1e3', T: '0o17' });
    const text = formatYaml(secrets);
    for (const version of ['1.2', '1.1'] as const) {
      assert.deepEqual(parseYaml(text, { version }), secrets, `YAML ${version}`);
    }
    assert.deepEqual(parseYaml(formatYaml({})), {});
  });
});

describe('JSON', () => {
  it('round-trips through formatJson and parseJsonSecrets', () => {
    const secrets = Object.fromEntries(TRICKY.map((v, i) => [`K${i}`, v]));
    const back = Object.fromEntries(
      parseJsonSecrets(formatJson(secrets)).map((e) => [e.name, e.value]),
    );
    assert.deepEqual(back, secrets);
  });

  it('takes numbers and booleans as text and refuses other values and bad names', () => {
    assert.deepEqual(parseJsonSecrets('{"PORT": 5432, "DEBUG": false, "S": "x"}'), [
      { name: 'PORT', value: '5432' },
      { name: 'DEBUG', value: 'false' },
      { name: 'S', value: 'x' },
    ]);
    assert.throws(() => parseJsonSecrets('{"A": null}'), /"A" must be a string/);
    assert.throws(() => parseJsonSecrets('{"A": {"b": 1}}'), /"A" must be a string/);
    assert.throws(() => parseJsonSecrets('{"bad-name": "x"}'), /not a valid name/);
    assert.throws(() => parseJsonSecrets('["A"]'), /JSON object/);
    assert.throws(() => parseJsonSecrets('{'), /Not valid JSON/);
  });
});
