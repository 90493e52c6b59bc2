import { CliError } from './cli/errors.js';

// Every item of a paginated listing, as the SDK reads it (100 per request).
export { allPages } from '@coffer/sdk';

/**
 * An item named by id (`prefix…`) or by a human handle (a project's name, a
 * member's e-mail): ids are used as they are, handles are looked up in the
 * listing, case-insensitively, and must match exactly one item.
 */
export async function resolveId<T extends { id: string }>(
  ref: string,
  idPrefix: string,
  kind: string,
  list: () => Promise<T[]>,
  handles: (item: T) => string[],
): Promise<string> {
  if (ref.startsWith(idPrefix)) return ref;
  const wanted = ref.trim().toLowerCase();
  const matches = (await list()).filter((item) =>
    handles(item).some((h) => h.toLowerCase() === wanted),
  );
  if (matches.length === 0) throw new CliError('not_found', `no ${kind} "${ref}"`);
  if (matches.length > 1) {
    throw new CliError(
      'ambiguous',
      `${matches.length} ${kind}s match "${ref}": use the id (${matches.map((m) => m.id).join(', ')})`,
    );
  }
  return matches[0]!.id;
}

/** An invitation link (`…/invite?token=…`) or the bare token. */
export function invitationToken(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  try {
    const token = new URL(raw).searchParams.get('token');
    if (token) return token;
  } catch {
    // not a URL: the token itself
  }
  return raw.trim();
}
