import type * as LibsodiumModule from 'libsodium-wrappers-sumo';
import { CryptoError } from './errors.js';

/** libsodium's streaming HMAC-SHA-256 exists at runtime but is missing from @types. */
interface HmacSha256Streaming {
  crypto_auth_hmacsha256_init(key: Uint8Array | null): LibsodiumModule.StateAddress;
  crypto_auth_hmacsha256_update(state: LibsodiumModule.StateAddress, message: Uint8Array): void;
  crypto_auth_hmacsha256_final(state: LibsodiumModule.StateAddress): Uint8Array;
}

type Sodium = typeof LibsodiumModule & HmacSha256Streaming;

let instance: Sodium | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads libsodium. From 0.8 on, libsodium-wrappers-sumo's ESM entry works in
 * Node and in bundlers alike (0.7.x imported a file its package did not ship).
 */
async function importLibsodium(): Promise<Sodium> {
  const imported = (await import('libsodium-wrappers-sumo')) as unknown as Sodium & {
    default?: Sodium;
  };
  return imported.default ?? imported;
}

/** Initialises libsodium once; every other crypto function is synchronous afterwards. */
export function ready(): Promise<void> {
  loading ??= importLibsodium().then(
    async (lib) => {
      await lib.ready;
      instance = lib;
    },
    (error: unknown) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

export function sodium(): Sodium {
  if (instance === undefined) throw new CryptoError('not_ready');
  return instance;
}

export function randomBytes(length: number): Uint8Array {
  // The platform CSPRNG (WebCrypto, in Node 20+ and every browser): libsodium.js
  // would fetch it 4 bytes per JavaScript callback, about 0.3 ms per nonce.
  const out = new Uint8Array(length);
  for (let offset = 0; offset < length; offset += 65536) {
    globalThis.crypto.getRandomValues(out.subarray(offset, Math.min(length, offset + 65536)));
  }
  return out;
}
