import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  activeClaim,
  claimContextOn,
  runClaimed,
  type WriteClaim,
} from '../../src/db/write-claims.js';

/** A claim as the idempotency service makes one; only `active` matters here. */
const claimOf = (): WriteClaim =>
  ({ active: true, settled: false, writing: false, committed: null }) as unknown as WriteClaim;

/** Runs `work` inside `claim` as the request pipeline does; resolves with its result and the release. */
function claimed<T>(
  claim: WriteClaim,
  work: () => Promise<T>,
): Promise<{ value: T; release: () => void }> {
  return new Promise((resolve, reject) => {
    let release!: () => void;
    runClaimed(
      claim,
      () => void work().then((value) => resolve({ value, release }), reject),
      (r) => (release = r),
    );
  });
}

/** A request's work that reads its claim after a timer: what it sees. */
const claimAfterTimer = async () => {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return activeClaim();
};

describe('write claims: the context of a keyed request', () => {
  it('is carried through awaits and timers while the request is handled, and is off once no keyed request is', async () => {
    assert.equal(claimContextOn(), false, 'no context before any keyed request');
    const first = claimOf();
    const second = claimOf();
    const a = await claimed(first, async () => {
      await null;
      const afterAwait = activeClaim();
      await new Promise((resolve) => setTimeout(resolve, 2));
      return [afterAwait, activeClaim()];
    });
    assert.deepEqual(a.value, [first, first]);
    const b = await claimed(second, async () => activeClaim());
    assert.equal(b.value, second);

    // One of two answered: the other keeps its context, the answered one is no longer claimed.
    a.release();
    assert.equal(first.active, false);
    assert.equal(claimContextOn(), true);
    const third = claimOf();
    const c = await claimed(third, claimAfterTimer);
    assert.equal(c.value, third);

    // All answered: reads and writes without a key pay no promise hook.
    b.release();
    c.release();
    c.release(); // a second close of the same request changes nothing
    assert.equal(claimContextOn(), false);
    assert.equal(activeClaim(), undefined);
    // A later keyed request turns it on again.
    const fourth = claimOf();
    const d = await claimed(fourth, claimAfterTimer);
    assert.equal(d.value, fourth);
    d.release();
    assert.equal(claimContextOn(), false);
  });
});
