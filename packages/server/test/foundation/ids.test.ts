import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ID_PREFIX, isId, newId } from '../../src/ids.js';

describe('ids', () => {
  it('are well-formed, unique and use the whole alphabet evenly', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('secret'));
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.ok(isId('secret', id), id);
    // 400,000 suffix characters over 62 letters: each should appear about 6,450 times.
    const counts = new Map<string, number>();
    for (const id of ids)
      for (const c of id.slice(ID_PREFIX.secret.length + 1))
        counts.set(c, (counts.get(c) ?? 0) + 1);
    assert.equal(counts.size, 62);
    for (const [c, n] of counts) assert.ok(n > 5_800 && n < 7_100, `${c}: ${n}`);
  });

  it('isId checks the kind and the shape', () => {
    const id = newId('environment');
    assert.ok(isId('environment', id));
    assert.ok(!isId('secret', id));
    assert.ok(!isId('environment', `${id}x`));
    assert.ok(!isId('environment', id.replace(/.$/, '-')));
  });

  it('ids of the rows every write appends start with the time they were made, and sort by it', async () => {
    const digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const suffix = (id: string) => id.slice(id.indexOf('_') + 1);
    const madeAt = (id: string) =>
      [...suffix(id).slice(0, 8)].reduce((ms, c) => ms * 62 + digits.indexOf(c), 0);
    const before = Date.now();
    const first = newId('secretVersion');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const later = Array.from({ length: 2_000 }, () => newId('auditEvent'));
    const after = Date.now();
    assert.ok(isId('secretVersion', first) && later.every((id) => isId('auditEvent', id)));
    for (const id of [first, ...later]) {
      const at = madeAt(id);
      assert.ok(at >= before && at <= after, `${id}: ${at} not in ${before}..${after}`);
    }
    // Sorted as text (SQLite's and the C collation's byte order): by time first.
    for (const id of later) assert.ok(suffix(id) > suffix(first), `${id} sorts before ${first}`);
    // After the time, 12 random characters: unique, and spread over the alphabet.
    const tails = new Set(later.map((id) => suffix(id).slice(8)));
    assert.equal(tails.size, later.length);
    assert.equal(new Set([...tails].join('')).size, 62);
    // Other kinds stay random from the first character.
    const projects = Array.from({ length: 200 }, () => suffix(newId('project')).slice(0, 8));
    assert.ok(new Set(projects).size > 190, 'project ids do not start with a shared time');
  });
});
