/**
 * The typed API client.
 *
 * How it is built, and how to add a domain:
 * - `http.ts` holds `CofferClient`, the one transport: base URL (https, or http
 *   only to localhost), credentials (a `cek_`/`ci_` bearer, or the session
 *   cookie: kept from `Set-Cookie` and sent back with `Origin` in Node, left to
 *   the browser with `credentials: 'include'`), the Form A envelope, typed
 *   errors (`CofferApiError` with `code`/`status`/`details`/`requestId` and
 *   `isCode()`, `CofferNetworkError` when no answer came) and the 429 retry
 *   honouring `Retry-After`.
 * - Each domain is one file next to it (`auth.ts`, `projects.ts`, `vault.ts`, …)
 *   exporting plain functions that take the client first, like the server's
 *   repositories take the database handle first:
 *
 *     export const getProject = (client: CofferClient, projectId: string) =>
 *       client.request<Project>('GET', apiPath`/v1/projects/${projectId}`);
 *
 *     export const listProjects = (client: CofferClient, query: ListQuery = {}) =>
 *       client.requestPage<Project>('GET', '/v1/projects', { query });
 *
 *   `request` returns the response's `data` (undefined for 204), `requestPage`
 *   returns `{ data, pagination }`. Build paths with `apiPath` so ids and names
 *   are encoded as one segment. Declare the API's response types in the
 *   domain file; do crypto with `../crypto/index.js` before sending, so only
 *   ciphertext and public material reach the server.
 * - The response types are held to the server's OpenAPI document, field by
 *   field, by packages/server/test/foundation/sdk-contract.test.ts: a type
 *   that differs from the operation its call reaches fails there.
 * - Add one `export * from './<domain>.js'` line below.
 */
export * from './errors.js';
export * from './http.js';
export * from './auth.js';
export * from './vault.js';
export * from './tokens.js';
export * from './projects.js';
export * from './members.js';
export * from './environments.js';
export * from './secrets.js';
export * from './secrets-text.js';
export * from './audit.js';
export * from './key-trust.js';
export * from './membership-chain.js';
export * from './overrides.js';
export * from './events.js';
export * from './webhooks.js';
