import type * as LibsodiumModule from 'libsodium-wrappers-sumo';
import { CryptoError } from './errors.js';

/** libsodium's streaming HMAC-SHA-256 exists at runtime but is missing from @types. */
interface HmacSha256Streaming {
  crypto_auth_hmacsha256_init(key: Uint8Array | null): LibsodiumModule.StateAddress;
  crypto_auth_hmacsha256_update(state: LibsodiumModule.StateAddress, message: Uint8Array): void;
  crypto_auth_hmacsha256_final(state: LibsodiumModule.StateAddress): Uint8Array;
}

export type Sodium = typeof LibsodiumModule & HmacSha256Streaming;

interface NodeModuleBuiltin {
  createRequire(url: string): (id: string) => unknown;
}

interface ProcessWithBuiltins {
  getBuiltinModule?: (id: string) => unknown;
}

let instance: Sodium | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads libsodium.
 *
 * libsodium-wrappers-sumo 0.7.16's ESM entry (the "import" export condition)
 * does `import "./libsodium-sumo.mjs"`, a file that ships in the separate
 * `libsodium-sumo` package, so a plain `import` fails with ERR_MODULE_NOT_FOUND
 * in Node (jedisct1/libsodium.js#355, #360). The CommonJS build is intact.
 * In Node (>= 20.16) we therefore reach `createRequire` through
 * `process.getBuiltinModule`, which needs no `node:` import, so browser
 * bundlers never see it. Everywhere else we use the ESM entry: a bundler
 * using 0.7.16 must alias `libsodium-wrappers-sumo` to its CommonJS file (see
 * CRYPTO.md); from 0.8 on the ESM entry works unchanged.
 */
async function importLibsodium(): Promise<Sodium> {
  const process = (globalThis as { process?: ProcessWithBuiltins }).process;
  const nodeModule = process?.getBuiltinModule?.('module') as NodeModuleBuiltin | undefined;
  if (nodeModule !== undefined) {
    return nodeModule.createRequire(import.meta.url)('libsodium-wrappers-sumo') as Sodium;
  }
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
  return sodium().randombytes_buf(length);
}
