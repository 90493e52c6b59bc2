import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, hkdfSync } from 'node:crypto';
import { before, describe, it } from 'node:test';
import {
  createGrant,
  fromBase64url,
  generateProjectKey,
  isCryptoError,
  ready,
  toBase64url,
  tokenKeyPairFromKeyPart,
  tokenKeysFromKeyPart,
  tokenSigningKeyPairFromKeyPart,
  verifyGrantSignature,
} from '../src/index.js';

// Known answer for the token's Ed25519 key (the one an API key signs the grants
// of the CI tokens it mints with): key part = bytes 0x00…0x1f.
const KEY_PART = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8';
const SIGNING_SEED_HEX = 'f91fcea566e4e4f14ffd839856704f12517912572ed90afae0b1b4b791565bbe';
const SIGNING_PUBLIC_KEY = 'o7ym6Co1W5BlF_PrIso5vXQhLNovLej46kkl_ms8Tsk';
const X25519_PUBLIC_KEY = 'RwHQhIhFH1RaQJ-1iuPlhYHKQKw_fxFGmM1x3qxzygE';

/** Ed25519 public key of a 32-byte seed, computed by Node's OpenSSL instead of libsodium. */
function ed25519PublicKeyOf(seed: Buffer): string {
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const key = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return createPublicKey(key)
    .export({ format: 'der', type: 'spki' })
    .subarray(-32)
    .toString('base64url');
}

describe('token signing keys', () => {
  before(() => ready());

  it('derive the Ed25519 seed as HKDF(key part, "coffer/v1/token-signing-key") (known answer)', () => {
    const context = Buffer.from('coffer/v1/token-signing-key');
    const info = Buffer.concat([Buffer.from([0, 0, 0, context.length]), context]);
    const seed = Buffer.from(
      hkdfSync('sha256', fromBase64url(KEY_PART), Buffer.alloc(0), info, 32),
    );
    assert.equal(seed.toString('hex'), SIGNING_SEED_HEX);
    assert.equal(ed25519PublicKeyOf(seed), SIGNING_PUBLIC_KEY);

    const pair = tokenSigningKeyPairFromKeyPart(KEY_PART);
    assert.equal(toBase64url(pair.publicKey), SIGNING_PUBLIC_KEY);
    assert.equal(pair.secretKey.length, 64);
    const keys = tokenKeysFromKeyPart(KEY_PART);
    assert.equal(keys.signingPublicKey, SIGNING_PUBLIC_KEY);
    assert.equal(keys.publicKey, X25519_PUBLIC_KEY);
    assert.equal(toBase64url(tokenKeyPairFromKeyPart(KEY_PART).publicKey), X25519_PUBLIC_KEY);
  });

  it('never uses the key part itself as the signing seed', () => {
    assert.notEqual(ed25519PublicKeyOf(Buffer.from(fromBase64url(KEY_PART))), SIGNING_PUBLIC_KEY);
  });

  it('signs grants that verify against the token’s signing public key only', () => {
    const minter = tokenKeysFromKeyPart(KEY_PART);
    const recipient = tokenKeysFromKeyPart(toBase64url(new Uint8Array(32).fill(7)));
    const grant = createGrant({
      key: generateProjectKey(),
      kind: 'environment_key',
      projectId: 'proj_AAAAAAAAAAAAAAAAAAAA',
      epoch: 1,
      environmentId: 'env_AAAAAAAAAAAAAAAAAAAA',
      recipientId: 'cit_AAAAAAAAAAAAAAAAAAAA',
      recipientPublicKey: recipient.publicKey,
      granterId: 'key_AAAAAAAAAAAAAAAAAAAA',
      granterSigningSecretKey: minter.signing.secretKey,
    });
    assert.equal(
      verifyGrantSignature(grant, {
        recipientPublicKey: recipient.publicKey,
        granterSigningPublicKey: minter.signingPublicKey,
      }),
      true,
    );
    assert.equal(
      verifyGrantSignature(grant, {
        recipientPublicKey: recipient.publicKey,
        granterSigningPublicKey: recipient.signingPublicKey,
      }),
      false,
    );
  });

  it('refuses a malformed key part', () => {
    for (const bad of ['', 'short', `${KEY_PART}A`, KEY_PART.replace('A', '+')]) {
      assert.throws(
        () => tokenSigningKeyPairFromKeyPart(bad),
        (e) => isCryptoError(e, 'invalid_credential'),
      );
    }
  });
});
