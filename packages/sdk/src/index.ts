// @coffer/sdk: the typed API client and all client-side crypto (Node and browsers).
export * from './crypto/index.js';
export * from './client/index.js';
export * from './crypto/token-signing.js';
export * from './vault/index.js';
export * from './dotenv.js';
export * from './compare.js';
export * from './references.js';
