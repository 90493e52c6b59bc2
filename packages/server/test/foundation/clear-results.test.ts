import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  fromClearJson,
  fromShaped,
  requestStrings,
  resultShape,
  SHAPED_MARK,
  toClearJson,
  toShaped,
} from '../../src/domains/idempotency/body-strings.js';

// How a keyed write's result is stored in clear (`toClearJson`): whatever is
// stored, a repeat must get exactly the value back, or the answer it is
// given would differ from the first.

const value = 'v1.xc20p.1.' + 'A'.repeat(60);
const body = { value, comment: 'short' };
const url =
  '/v1/projects/proj_0123456789abcdefghij/environments/env_0123456789abcdefghij/secrets/DATABASE_URL?x=1';
const at = '2026-11-28T02:00:00.000Z';
const strings = requestStrings(body, url, at);

const roundTrip = (result: unknown) => {
  const text = toClearJson(result, strings);
  assert.notEqual(text, null);
  return { text: text!, back: fromClearJson(text!, requestStrings(body, url, at)) };
};

describe('results stored in clear', () => {
  it("leave out the strings the request holds, and get them back from the repeat's", () => {
    const result = {
      secret: {
        id: 'sec_abcdefghijklmnopqrst',
        environment_id: 'env_0123456789abcdefghij',
        name: 'DATABASE_URL',
        value,
        comment: 'short',
        created_at: at,
        updated_at: at,
      },
      created: true,
    };
    const { text, back } = roundTrip(result);
    assert.deepEqual(back, result);
    for (const held of [value, 'env_0123456789abcdefghij', 'DATABASE_URL', at])
      assert.ok(!text.includes(held), `${held} is in ${text}`);
    assert.ok(text.includes('sec_abcdefghijklmnopqrst') && text.includes('short'));
  });

  it('give back strings that look like marks, keys named __proto__, nesting and arrays as they were', () => {
    const result = JSON.parse(
      '{"__proto__": {"a": 1}, "list": [1, "two", null, true, {"x": [[]]}], "n": -1.5e300}',
    ) as Record<string, unknown>;
    result.mark = '\u00003';
    result.marks = '\u0000\u0000';
    result.nul = '\u0000';
    const { back } = roundTrip(result);
    assert.deepEqual(back, result);
    assert.ok(Object.hasOwn(back as object, '__proto__'));
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
  });

  it('are refused (null) for anything JSON would not give back as it was', () => {
    for (const odd of [
      { at: new Date(at) },
      { missing: undefined },
      [1, , 3], // eslint-disable-line no-sparse-arrays
      { n: Number.NaN },
      { n: Infinity },
      { big: 1n },
      { bytes: Buffer.from('x') },
      { map: new Map() },
      { f: () => 1 },
      (() => {
        const cycle: Record<string, unknown> = {};
        cycle.self = cycle;
        return cycle;
      })(),
    ])
      assert.equal(toClearJson(odd, strings), null, String(Object.keys(odd)));
  });

  it('fail to open when the request lacks a string the result names', () => {
    const text = toClearJson({ value }, strings)!;
    assert.throws(() => fromClearJson(text, []), /lacks/);
  });
});

describe('results stored by position (a shape)', () => {
  const shape = resultShape(
    'test-shape.1',
    ['environmentId', 'result.secret.id', 'result.secret.value', 'result.created'],
    {
      auditChain: '',
    },
  );
  const result = () => ({
    environmentId: 'env_0123456789abcdefghij',
    result: { secret: { id: 'sec_abcdefghijklmnopqrst', value }, created: true },
    auditChain: "select coffer_audit_chain('proj_x', array['evt_y']::text[])",
  });

  it('keep only the values, and give back the same result with the unstored leaves as declared', () => {
    const values = toShaped(result(), shape);
    assert.deepEqual(values, ['env_0123456789abcdefghij', 'sec_abcdefghijklmnopqrst', value, true]);
    const text = toClearJson(values, strings, SHAPED_MARK)!;
    assert.ok(
      !text.includes('secret') && !text.includes(value) && !text.includes('coffer_audit'),
      text,
    );
    const back = fromShaped(fromClearJson(text, requestStrings(body, url, at), SHAPED_MARK), shape);
    assert.deepEqual(back, { ...result(), auditChain: '' });
  });

  it('are refused (null) for a result laid out otherwise, so that it is stored as JSON', () => {
    const other = result() as Record<string, unknown>;
    const { secret } = other.result as { secret: Record<string, unknown> };
    assert.equal(toShaped({ ...other, extra: 1 }, shape), null, 'a property more');
    const { auditChain: _dropped, ...withoutChain } = other;
    assert.equal(toShaped(withoutChain, shape), null, 'an unstored leaf missing');
    assert.equal(
      toShaped({ ...other, result: { secret: { value, id: secret.id }, created: true } }, shape),
      null,
      'another order',
    );
    assert.equal(
      toShaped({ ...other, result: { secret: {}, created: true } }, shape),
      null,
      'a leaf where a branch was',
    );
    assert.equal(toShaped([1, 2, 3, 4], shape), null, 'an array');
    assert.equal(toShaped(null, shape), null);
  });

  it('fail to open when the stored values do not fit the shape', () => {
    assert.throws(() => fromShaped([1, 2], shape), /not laid out as test-shape\.1/);
    assert.throws(() => fromShaped({ a: 1 }, shape), /not laid out/);
  });

  it('cannot be declared twice under one name with other paths', () => {
    assert.equal(
      resultShape('test-shape.1', shape.paths, { auditChain: '' }).signature,
      shape.signature,
    );
    assert.throws(() => resultShape('test-shape.1', ['environmentId']), /declared twice/);
    assert.throws(() => resultShape('Bad Name', ['x']), /not a shape name/);
  });

  it('cannot be declared with paths no result could match', () => {
    // A result's leaves are met depth first: the paths of one branch follow each other.
    assert.throws(
      () => resultShape('test-split.1', ['a.x', 'b', 'a.y']),
      /paths under a do not follow each other/,
    );
    assert.throws(() => resultShape('test-through.1', ['a', 'a.x']), /runs through its leaf a/);
    assert.throws(() => resultShape('test-twice.1', ['a', 'a']), /is there twice/);
    assert.throws(
      () => resultShape('test-unstored.1', ['a'], { 'b.c': 1 }),
      /unstored leaf is under b/,
    );
  });

  it('find unstored leaves wherever they are in their branch', () => {
    const nested = resultShape('test-nested.1', ['a.x', 'a.y', 'b'], { 'a.skip': 0, top: 0 });
    const laidOut = { top: 'dropped', a: { x: 1, skip: 'dropped', y: [2] }, b: {} };
    assert.deepEqual(toShaped(laidOut, nested), [1, [2], {}]);
    assert.equal(toShaped({ ...laidOut, a: { x: 1, y: [2] } }, nested), null, 'a.skip missing');
    assert.equal(
      toShaped({ ...laidOut, a: { x: 1, skip: { deep: 1 }, y: [2] } }, nested),
      null,
      'a branch where an unstored leaf was',
    );
    assert.equal(toShaped({ ...laidOut, b: { c: 1 } }, nested), null, 'a branch where a leaf was');
  });
});
