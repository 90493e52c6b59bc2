// The SDK as the dashboard's first visit imports it: `@coffer/sdk` resolves
// here (vite.config.ts alias, tsconfig.json paths). The bundler puts every
// module this file reaches into the first visit's chunk, even a function only
// a lazily loaded screen calls; so the modules only such screens use are left
// out, and those screens import them by path (`@coffer/sdk/dotenv`,
// `@coffer/sdk/client/tokens`, …: the SDK's `src/` files). A module added here
// adds its code to the first visit (`npm run bench -- dashboard-first-load`).
export * from '@coffer/sdk/crypto/index';
export * from '@coffer/sdk/client/errors';
export * from '@coffer/sdk/client/http';
export * from '@coffer/sdk/client/auth';
export * from '@coffer/sdk/client/vault';
export * from '@coffer/sdk/client/projects';
export * from '@coffer/sdk/client/members';
export * from '@coffer/sdk/client/environments';
export * from '@coffer/sdk/client/secrets';
export * from '@coffer/sdk/client/key-trust';
export * from '@coffer/sdk/client/membership-chain';
export * from '@coffer/sdk/client/overrides';
export * from '@coffer/sdk/vault/errors';
export * from '@coffer/sdk/vault/keys';
export * from '@coffer/sdk/vault/session';
export * from '@coffer/sdk/vault/key-pins';
export * from '@coffer/sdk/vault/chain';
