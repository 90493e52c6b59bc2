import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  SecretReferenceError,
  SecretReferencesError,
  completeReference,
  escapeReferences,
  formatDotenv,
  parseDotenv,
  parseValue,
  referencedEnvironments,
  resolveReferences,
  resolveSecrets,
  type ReferenceLoader,
} from '../src/index.js';

/** A reader's world: environments by `project/env` key, and which of them it may read. */
function world(
  envs: Record<string, Record<string, string>>,
  readable: (key: string) => boolean = () => true,
) {
  const loads: string[] = [];
  const load: ReferenceLoader = async ({ project, environment }) => {
    const key = `${project ?? 'app'}/${environment}`;
    loads.push(key);
    if (!envs[key] || !readable(key)) return null;
    return { key, values: envs[key] };
  };
  return { load, loads };
}

const home = (environment = 'production') => ({
  key: `app/${environment}`,
  environment,
  project: 'app',
});

async function refusal(promise: Promise<unknown>): Promise<SecretReferenceError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof SecretReferenceError, `expected a SecretReferenceError, got ${err}`);
    return err;
  }
  assert.fail('expected a refusal');
}

describe('parseValue', () => {
  it('cuts text into literals and references of the three forms', () => {
    assert.deepEqual(
      parseValue('a${B}c${staging.D}${my project/dev.E_1}').map((p) =>
        typeof p === 'string' ? p : [p.project, p.environment, p.name],
      ),
      ['a', [null, null, 'B'], 'c', [null, 'staging', 'D'], ['my project', 'dev', 'E_1']],
    );
  });

  it('$${ is a literal ${, and a lone $ stays', () => {
    assert.deepEqual(parseValue('$${A} costs $5 and $$'), ['${A} costs $5 and $$']);
  });

  it('refuses what is not a reference, naming the secret', () => {
    for (const bad of ['${', '${A', '${A:-x}', '${}', '${1A}', '${Staging.A}', '${p/A}']) {
      assert.throws(
        () => parseValue(bad, 'URL'),
        (e: SecretReferenceError) =>
          e.code === 'invalid_reference' && e.secret === 'URL' && /^URL: /.test(e.message),
        bad,
      );
    }
  });
});

describe('referencedEnvironments', () => {
  it('names each other environment a set of values refers to, once', () => {
    assert.deepEqual(
      referencedEnvironments({
        A: '${staging.X}${staging.Y}',
        B: '${billing/prod.K} ${LOCAL} $${dev.Z}',
        C: 'plain',
      }),
      [
        { project: null, environment: 'staging' },
        { project: 'billing', environment: 'prod' },
      ],
    );
  });
});

describe('resolveSecrets: known answers', () => {
  it('a value without references is itself; nothing is fetched', async () => {
    const w = world({});
    assert.deepEqual(await resolveSecrets({ A: 'x', B: '' }, { ...home(), load: w.load }), {
      A: 'x',
      B: '',
    });
    assert.deepEqual(w.loads, []);
  });

  it('nested references in one environment', async () => {
    const values = {
      HOST: 'db',
      PORT: '5432',
      ADDR: '${HOST}:${PORT}',
      URL: 'postgres://${ADDR}/app',
    };
    assert.deepEqual(await resolveSecrets(values, home()), {
      ...values,
      ADDR: 'db:5432',
      URL: 'postgres://db:5432/app',
    });
  });

  it('cross-environment: fetched once, only when referenced; ${ENV.KEY} inside it stays there', async () => {
    const w = world({
      'app/staging': { USER: 'u', PASS: 'p', CRED: '${USER}:${PASS}', UNUSED: '${missing.X}' },
      'app/shared': { HOST: 'h' },
    });
    const values = { URL: 'x://${staging.CRED}@${shared.HOST}', B: '${staging.USER}' };
    assert.deepEqual(await resolveSecrets(values, { ...home(), load: w.load }), {
      URL: 'x://u:p@h',
      B: 'u',
    });
    assert.deepEqual(w.loads.sort(), ['app/shared', 'app/staging']);
  });

  it('${home.KEY} reads the home values (and so its overrides) without a fetch', async () => {
    const w = world({});
    assert.deepEqual(
      await resolveSecrets({ A: 'mine', B: '${production.A}' }, { ...home(), load: w.load }),
      { A: 'mine', B: 'mine' },
    );
    assert.deepEqual(w.loads, []);
  });

  it('cross-project: ${PROJECT/ENV.KEY}, and ${ENV.KEY} inside it means that project', async () => {
    const w = world({
      'billing/prod': { KEY: 'k-${live.SUFFIX}' },
      'billing/live': { SUFFIX: '42' },
    });
    assert.deepEqual(
      await resolveSecrets({ API: '${billing/prod.KEY}' }, { ...home(), load: w.load }),
      { API: 'k-42' },
    );
    assert.deepEqual(w.loads, ['billing/prod', 'billing/live']);
  });

  it('escapes: $${ resolves to ${ and is not followed', async () => {
    assert.deepEqual(await resolveSecrets({ A: '$${B}', B: 'x' }, home()), { A: '${B}', B: 'x' });
  });

  it('a cycle is named, for each secret in it and each that depends on it', async () => {
    const { errors } = await resolveReferences(
      { A: '${B}', B: 'x${C}', C: '${A}', D: '${A}', E: 'ok' },
      home(),
    );
    assert.equal(errors.A!.code, 'reference_cycle');
    assert.equal(errors.A!.message, 'A: references form a cycle: A → B → C → A');
    assert.deepEqual(errors.A!.cycle, ['A', 'B', 'C', 'A']);
    assert.equal(errors.D!.code, 'reference_cycle');
    assert.match(errors.D!.message, /^D: references form a cycle: .*A → B → C → A/);
    assert.equal(errors.E, undefined);
    const self = await refusal(resolveSecrets({ A: '${A}' }, home()));
    assert.equal(self.message, 'A: references form a cycle: A → A');
  });

  it('a cycle across environments names both', async () => {
    const w = world({ 'app/staging': { B: '${production.A}' } });
    const e = await refusal(resolveSecrets({ A: '${staging.B}' }, { ...home(), load: w.load }));
    assert.equal(e.message, 'A: references form a cycle: A → staging.B → A');
  });

  it('depth: 16 links resolve, 17 are refused', async () => {
    const chain = (n: number) => {
      const v: Record<string, string> = { S0: 'end' };
      for (let i = 1; i <= n; i++) v[`S${i}`] = `\${S${i - 1}}`;
      return v;
    };
    assert.equal((await resolveSecrets(chain(16), home())).S16, 'end');
    const { errors } = await resolveReferences(chain(17), home());
    assert.equal(errors.S17!.code, 'reference_too_deep');
    assert.deepEqual(Object.keys(errors), ['S17']);
    // a long chain is refused, not a stack overflow
    const { errors: long } = await resolveReferences(chain(5000), home());
    assert.equal(long.S5000!.code, 'reference_too_deep');
    assert.equal(Object.keys(long).length, 5000 - 16);
  });

  it('missing: names the secret, the reference and the environment', async () => {
    const w = world({ 'app/staging': { A: '1' } });
    const e = await refusal(
      resolveSecrets({ URL: 'x${staging.NOPE}' }, { ...home(), load: w.load }),
    );
    assert.equal(e.code, 'reference_missing');
    assert.equal(e.reference, '${staging.NOPE}');
    assert.equal(e.message, 'URL: ${staging.NOPE}: environment "staging" has no secret NOPE');
    const here = await refusal(resolveSecrets({ URL: '${NOPE}' }, home()));
    assert.equal(here.message, 'URL: ${NOPE}: this environment has no secret NOPE');
  });

  it('forbidden and nonexistent environments get the same words: nothing leaks about existence', async () => {
    const w = world({ 'app/staging': { X: 'secret' } }, (key) => key !== 'app/staging');
    const forbidden = await refusal(
      resolveSecrets({ URL: '${staging.X}' }, { ...home(), load: w.load }),
    );
    const absent = await refusal(
      resolveSecrets({ URL: '${nowhere.X}' }, { ...home(), load: w.load }),
    );
    assert.equal(forbidden.code, 'reference_unreadable');
    assert.equal(absent.code, 'reference_unreadable');
    assert.equal(
      forbidden.message,
      'URL: ${staging.X} cannot be read: environment "staging" does not exist or this credential holds no key for it',
    );
    assert.equal(
      absent.message.replaceAll('nowhere', 'staging'),
      forbidden.message,
      'the same words whether or not the environment exists',
    );
  });

  it('a dependent names the path to the failure; several failures are all listed', async () => {
    const err = await resolveSecrets({ URL: '${DB}', DB: '${NOPE}', Z: '${ALSO}' }, home()).then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SecretReferencesError);
    assert.deepEqual(
      err.errors.map((e) => e.message),
      [
        'DB: ${NOPE}: this environment has no secret NOPE',
        'URL: URL → DB: ${NOPE}: this environment has no secret NOPE',
        'Z: ${ALSO}: this environment has no secret ALSO',
      ],
    );
  });

  it('without a loader, any other environment is unreadable', async () => {
    const e = await refusal(resolveSecrets({ A: '${staging.B}' }, home()));
    assert.equal(e.code, 'reference_unreadable');
  });
});

// ---- Properties, over small random worlds (seeded, so a failure replays) --------

function random(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

function randomWorld(seed: number) {
  const rnd = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const envNames = ['production', 'staging', 'dev'];
  const projects = ['app', 'other'];
  const names = ['A', 'B', 'C', 'D', 'E'];
  const envs: Record<string, Record<string, string>> = {};
  for (const p of projects)
    for (const e of envNames) {
      const values: Record<string, string> = {};
      for (const n of names) {
        if (rnd() < 0.2) continue;
        const parts: string[] = [];
        const count = Math.floor(rnd() * 3);
        for (let i = 0; i < count; i++) {
          const r = rnd();
          const target = pick(names);
          parts.push(
            r < 0.4
              ? `\${${target}}`
              : r < 0.7
                ? `\${${pick(envNames)}.${target}}`
                : r < 0.8
                  ? `\${${pick(projects)}/${pick(envNames)}.${target}}`
                  : r < 0.9
                    ? '$${lit}'
                    : `v${Math.floor(rnd() * 100)}`,
          );
        }
        values[n] = parts.join('-');
      }
      envs[`${p}/${e}`] = values;
    }
  const readable = new Set(Object.keys(envs).filter(() => rnd() < 0.6));
  readable.add('app/production');
  return { envs, readable };
}

describe('resolveReferences: properties', () => {
  it('never reads an environment the reader could not read directly, and whatever resolves is built only from readable values', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const { envs, readable } = randomWorld(seed);
      const served: string[] = [];
      const load: ReferenceLoader = async ({ project, environment }) => {
        const key = `${project ?? 'app'}/${environment}`;
        if (!readable.has(key) || !envs[key]) return null;
        served.push(key);
        return { key, values: envs[key] };
      };
      const { values, errors } = await resolveReferences(envs['app/production']!, {
        ...home(),
        load,
      });
      for (const key of served) assert.ok(readable.has(key), `seed ${seed}: read ${key}`);
      assert.equal(
        new Set(served).size,
        served.length,
        `seed ${seed}: an environment fetched twice`,
      );
      for (const name of Object.keys(envs['app/production']!)) {
        assert.ok(
          Object.hasOwn(values, name) !== Object.hasOwn(errors, name),
          `seed ${seed}: ${name} is resolved or refused, never both or neither`,
        );
      }
      // Every value's literal chunks come from readable environments only: an
      // unreadable environment's literal ("v<n>") never appears unless a
      // readable one holds the same text.
      const readableLiterals = new Set(
        [...readable].flatMap((k) =>
          Object.values(envs[k] ?? {}).flatMap((v) => v.match(/v\d+/g) ?? []),
        ),
      );
      for (const v of Object.values(values))
        for (const lit of v.match(/v\d+/g) ?? [])
          assert.ok(readableLiterals.has(lit), `seed ${seed}: ${lit} came from elsewhere`);
    }
  });

  it('resolving is deterministic and a reference-free value resolves to itself', async () => {
    for (let seed = 1; seed <= 100; seed++) {
      const { envs } = randomWorld(seed);
      const load: ReferenceLoader = async ({ project, environment }) => {
        const key = `${project ?? 'app'}/${environment}`;
        return envs[key] ? { key, values: envs[key] } : null;
      };
      const a = await resolveReferences(envs['app/production']!, { ...home(), load });
      const b = await resolveReferences(envs['app/production']!, { ...home(), load });
      assert.deepEqual(a.values, b.values);
      assert.deepEqual(
        Object.fromEntries(Object.entries(a.errors).map(([k, e]) => [k, e.message])),
        Object.fromEntries(Object.entries(b.errors).map(([k, e]) => [k, e.message])),
      );
      for (const [name, raw] of Object.entries(envs['app/production']!))
        if (!raw.includes('$')) assert.equal(a.values[name], raw);
    }
  });

  it('raw values round-trip through a .env export and import unchanged (node dialect)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { envs } = randomWorld(seed);
      for (const values of Object.values(envs)) {
        const text = formatDotenv(values, { dialect: 'node' });
        const back = Object.fromEntries(
          parseDotenv(text, { dialect: 'node' }).map((e) => [e.name, e.value]),
        );
        assert.deepEqual(back, values, `seed ${seed}`);
      }
    }
  });

  it('escapeReferences gives the raw text that resolves to the value itself', async () => {
    for (const value of ['${A}', '$${A}', 'a$b${', '}${x.y}', '$$', '']) {
      assert.deepEqual(await resolveSecrets({ V: escapeReferences(value) }, home()), { V: value });
    }
  });
});

describe('completeReference', () => {
  const catalog = {
    names: ['DB_HOST', 'DB_PASS', 'API_KEY'],
    environments: { staging: ['DB_USER', 'DB_HOST'], shared: ['SENTRY'] },
  };
  it('offers names of this environment and environments after ${', () => {
    assert.deepEqual(completeReference('postgres://${', catalog), {
      from: 13,
      options: ['API_KEY}', 'DB_HOST}', 'DB_PASS}', 'shared.', 'staging.'],
    });
    assert.deepEqual(completeReference('x ${db_', catalog)?.options, ['DB_HOST}', 'DB_PASS}']);
    assert.deepEqual(completeReference('${s', catalog)?.options, ['shared.', 'staging.']);
  });
  it('offers the names of a readable environment after ENV.', () => {
    assert.deepEqual(completeReference('${staging.DB_', catalog), {
      from: 2,
      options: ['staging.DB_HOST}', 'staging.DB_USER}'],
    });
    assert.deepEqual(completeReference('${production.', catalog)?.options, []);
  });
  it('nothing outside an unfinished reference, after $${ or a closed one', () => {
    assert.equal(completeReference('plain', catalog), null);
    assert.equal(completeReference('$${DB', catalog), null);
    assert.equal(completeReference('${DB_HOST} and', catalog), null);
  });
});
