import { CofferClient } from '@coffer/sdk';

/**
 * The one API client of the dashboard. Same origin as the API, so the browser
 * sends the HttpOnly session cookie and the Origin header itself; the client
 * never sees the session token.
 */
export const client = new CofferClient({
  baseUrl: window.location.origin,
  fetch: (input, init) => window.fetch(input, { ...init, credentials: 'same-origin' }),
});
