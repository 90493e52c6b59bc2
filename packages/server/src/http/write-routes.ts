/** The methods that may change state: what idempotency keys, write marks and the change feed concern. */
export const UNSAFE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Whether a route serves an unsafe method. The write hooks are added to those
 * routes only (in `onRoute`), so reads pay nothing for them.
 */
export function servesWrites(route: { method: string | string[] }): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  return methods.some((m) => UNSAFE_METHODS.has(m));
}

/** A route option's hooks as a list (Fastify takes one, a list, or none). */
export function hooksOf<H>(hooks: H | H[] | undefined): H[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}
