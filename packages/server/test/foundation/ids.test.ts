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
});
