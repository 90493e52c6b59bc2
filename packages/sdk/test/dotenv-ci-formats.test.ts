// The CI export formats read back by the rules their readers follow: the
// `$GITHUB_ENV` file as the GitHub Actions runner parses it, `::add-mask::`
// commands as the runner decodes them, and a Kubernetes Secret through the
// `yaml` package and base64. Every value of the shared hard-value corpus comes
// back exactly, or is refused naming its secret.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import {
  formatGithubEnv,
  formatGithubMasks,
  formatKubernetesSecret,
  isDns1123Label,
  isDns1123Subdomain,
  UnwritableValueError,
} from '../src/dotenv.js';
import { formatSecrets } from '../src/client/secrets-text.js';
import {
  decodeMaskData,
  parseGithubEnv,
  parseGithubMasks,
  unmaskedLines,
} from './support/github-actions.js';
import { CORPUS } from './support/dotenv-corpus.js';

const name = (i: number) => `K${i}`;
const secrets = Object.fromEntries(CORPUS.map(([, v], i) => [name(i), v]));
const withoutNul = Object.fromEntries(Object.entries(secrets).filter(([, v]) => !v.includes('\0')));
const labelOf = (key: string) => CORPUS[Number(key.slice(1))]![0];

describe('formatGithubEnv read back as the runner reads $GITHUB_ENV', () => {
  test('every value of the corpus comes back exactly (NUL refused, naming the secret)', () => {
    CORPUS.forEach(([label, value], i) => {
      if (!value.includes('\0')) return;
      assert.throws(
        () => formatGithubEnv({ [name(i)]: value }),
        (err: unknown) => err instanceof UnwritableValueError && err.secretName === name(i),
        label,
      );
    });
    const text = formatGithubEnv(withoutNul);
    const read = parseGithubEnv(text);
    for (const [key, value] of Object.entries(withoutNul))
      assert.equal(read.get(key), value, `"${labelOf(key)}" read back wrong`);
    assert.equal(read.size, Object.keys(withoutNul).length);
    assert.ok(read.size >= 150);
  });

  test('single-line values are NAME=value, the others a heredoc with a random delimiter', () => {
    const text = formatGithubEnv({ A: 'x=y <<EOF', B: 'two\nlines', C: '' });
    const lines = text.split('\n');
    assert.equal(lines[0], 'A=x=y <<EOF');
    const heredoc = /^B<<(ghadelimiter_[0-9a-f]{32})$/.exec(lines[1]!);
    assert.ok(heredoc, lines[1]);
    assert.deepEqual(lines.slice(2, 5), ['two', 'lines', heredoc[1]]);
    assert.equal(lines[5], 'C=');
    // A fresh delimiter every time.
    const again = /^B<<(\S+)$/m.exec(formatGithubEnv({ B: 'two\nlines' }))![1];
    assert.notEqual(again, heredoc[1]);
  });

  test('a delimiter the value contains is drawn again', () => {
    const drawn = ['EOF', 'EOF2', 'END'];
    const text = formatGithubEnv(
      { A: 'line\nEOF\nEOF2 inside\nlast' },
      { delimiter: () => drawn.shift()! },
    );
    assert.equal(text, 'A<<END\nline\nEOF\nEOF2 inside\nlast\nEND\n');
    assert.equal(parseGithubEnv(text).get('A'), 'line\nEOF\nEOF2 inside\nlast');
  });

  test('appended after other steps’ lines, each value is still read exactly', () => {
    const before = 'OTHER=1\nMULTI<<X\na\nX\n';
    const read = parseGithubEnv(before + formatGithubEnv(withoutNul));
    assert.equal(read.get('OTHER'), '1');
    assert.equal(read.get('MULTI'), 'a');
    for (const [key, value] of Object.entries(withoutNul)) assert.equal(read.get(key), value);
  });
});

describe('formatGithubMasks', () => {
  const masks = parseGithubMasks(formatGithubMasks(withoutNul));

  test('every non-blank line of every value is masked, and nothing else', () => {
    const expected = new Set<string>();
    for (const value of Object.values(withoutNul))
      for (const line of value.split(/\r\n|\r|\n/)) if (line.trim() !== '') expected.add(line);
    assert.deepEqual(new Set(masks), expected);
    assert.equal(masks.length, expected.size, 'each line once');
    assert.ok(!masks.some((m) => m.trim() === ''), 'no blank mask');
  });

  test('a log that prints any value line by line shows none of it once masked', () => {
    for (const [key, value] of Object.entries(withoutNul))
      assert.deepEqual(unmaskedLines(value, masks), [], `"${labelOf(key)}" shows in the log`);
  });

  test('%, CR and LF are escaped as the runner decodes them', () => {
    const text = formatGithubMasks({ A: '100%0A sure\r\nsecond' });
    assert.equal(text, '::add-mask::100%250A sure\n::add-mask::second\n');
    assert.equal(decodeMaskData('100%250A sure'), '100%0A sure');
  });

  test('a NUL is refused naming the secret', () => {
    assert.throws(
      () => formatGithubMasks({ N: 'a\0b' }),
      (err: unknown) => err instanceof UnwritableValueError && err.secretName === 'N',
    );
  });
});

describe('formatKubernetesSecret read back by the yaml package', () => {
  test('every value of the corpus comes back from base64 exactly, NUL included', () => {
    const text = formatKubernetesSecret(secrets, { name: 'app-secrets', namespace: 'prod' });
    for (const version of ['1.2', '1.1'] as const) {
      const doc = parseYaml(text, { version }) as {
        apiVersion: string;
        kind: string;
        metadata: Record<string, unknown>;
        type: string;
        data: Record<string, string>;
      };
      assert.equal(doc.apiVersion, 'v1');
      assert.equal(doc.kind, 'Secret');
      assert.deepEqual(doc.metadata, { name: 'app-secrets', namespace: 'prod' });
      assert.equal(doc.type, 'Opaque');
      assert.deepEqual(Object.keys(doc.data).sort(), Object.keys(secrets).sort());
      for (const [key, encoded] of Object.entries(doc.data)) {
        assert.match(encoded, /^[A-Za-z0-9+/]*={0,2}$/);
        assert.equal(encoded.length % 4, 0);
        assert.equal(
          Buffer.from(encoded, 'base64').toString('utf8'),
          secrets[key],
          `"${labelOf(key)}" decoded wrong (YAML ${version})`,
        );
      }
    }
  });

  test('names YAML would read as other types stay strings; no secrets is an empty map', () => {
    for (const n of ['true', 'no', '123', '1e3', 'null', 'y']) {
      const doc = parseYaml(formatKubernetesSecret({ ON: 'x' }, { name: n }), {
        version: '1.1',
      }) as { metadata: { name: unknown }; data: Record<string, string> };
      assert.equal(doc.metadata.name, n);
      assert.deepEqual(Object.keys(doc.data), ['ON']);
    }
    const empty = parseYaml(formatKubernetesSecret({}, { name: 'empty' })) as { data: unknown };
    assert.deepEqual(empty.data, {});
  });

  test('the name must be a DNS-1123 subdomain, the namespace a DNS-1123 label', () => {
    for (const ok of ['a', 'app-secrets', 'app.secrets.v1', '0', 'x'.repeat(253)])
      assert.ok(isDns1123Subdomain(ok), ok);
    for (const bad of [
      '',
      'App',
      '-a',
      'a-',
      'a..b',
      '.a',
      'a_b',
      'a b',
      'é',
      'x'.repeat(254),
      'a.-b',
    ]) {
      assert.ok(!isDns1123Subdomain(bad), bad);
      assert.throws(() => formatKubernetesSecret({}, { name: bad }), TypeError, bad);
    }
    assert.ok(isDns1123Label('prod-1'));
    for (const bad of ['a.b', 'x'.repeat(64), 'Prod'])
      assert.throws(
        () => formatKubernetesSecret({}, { name: 'ok', namespace: bad }),
        TypeError,
        bad,
      );
  });

  test('an unpaired surrogate is refused naming the secret', () => {
    assert.throws(
      () => formatKubernetesSecret({ S: 'a\ud800b' }, { name: 'x' }),
      (err: unknown) => err instanceof UnwritableValueError && err.secretName === 'S',
    );
  });
});

test('formatSecrets dispatches the CI formats as exportSecrets does', () => {
  assert.equal(parseGithubEnv(formatSecrets({ A: 'a\nb' }, 'github')).get('A'), 'a\nb');
  assert.equal(formatSecrets({ A: 'a\nb' }, 'github-masks'), '::add-mask::a\n::add-mask::b\n');
  assert.match(formatSecrets({ A: 'x' }, 'k8s', { name: 's' }), /^kind: Secret$/m);
  assert.throws(() => formatSecrets({ A: 'x' }, 'k8s'), TypeError);
});
