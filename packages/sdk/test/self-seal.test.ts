import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { generateUserKeys, isCryptoError, openFromSelf, ready, sealToSelf } from '../src/index.js';

before(() => ready());

const PURPOSE = 'dashboard staged changes v1';

test('sealToSelf: only the same key pair, purpose and owner open it', () => {
  const mine = generateUserKeys();
  const other = generateUserKeys();
  const text = JSON.stringify([['env', 'API_KEY', { kind: 'set', value: 'sk_live_é\n' }]]);
  const sealed = sealToSelf(mine.encryption.publicKey, PURPOSE, 'user-1', text);
  assert.ok(!Buffer.from(sealed.ciphertext).toString('utf8').includes('sk_live'));
  assert.equal(openFromSelf(mine.encryption, PURPOSE, 'user-1', sealed), text);

  const refused = (fn: () => unknown) =>
    assert.throws(fn, (e: unknown) => isCryptoError(e, 'decryption_failed'));
  refused(() => openFromSelf(other.encryption, PURPOSE, 'user-1', sealed));
  refused(() => openFromSelf(mine.encryption, PURPOSE, 'user-2', sealed));
  refused(() => openFromSelf(mine.encryption, 'another purpose', 'user-1', sealed));
  const altered = { ...sealed, ciphertext: sealed.ciphertext.slice() };
  altered.ciphertext[0]! ^= 1;
  refused(() => openFromSelf(mine.encryption, PURPOSE, 'user-1', altered));
});

test('sealToSelf: a fresh key and nonce each time', () => {
  const keys = generateUserKeys();
  const a = sealToSelf(keys.encryption.publicKey, PURPOSE, 'u', 'same');
  const b = sealToSelf(keys.encryption.publicKey, PURPOSE, 'u', 'same');
  assert.notDeepEqual(a.sealedKey, b.sealedKey);
  assert.notDeepEqual(a.nonce, b.nonce);
  assert.notDeepEqual(a.ciphertext, b.ciphertext);
});
