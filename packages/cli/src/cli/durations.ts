import { UsageError } from './errors.js';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** `90s`, `30m`, `1h`, `7d`, `2w`, or plain seconds → seconds. */
export function parseDuration(text: string, option: string, command: string): number {
  const match = /^(\d+)\s*([smhdw]?)$/i.exec(text.trim());
  if (!match)
    throw new UsageError(`${option} must be a duration like 30m, 1h or 7d, not "${text}"`, command);
  return Number(match[1]) * UNIT_SECONDS[(match[2] || 's').toLowerCase()]!;
}

/** An expiry given as a duration from now (`30d`) or an ISO date/time → ISO timestamp (UTC). */
export function parseExpiry(text: string, command: string, now = new Date()): string {
  if (/^\d+\s*[smhdw]?$/i.test(text.trim())) {
    return new Date(now.getTime() + parseDuration(text, '--expires', command) * 1000).toISOString();
  }
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) {
    throw new UsageError(
      `--expires must be a duration like 30d or a date like 2027-01-31, not "${text}"`,
      command,
    );
  }
  if (date.getTime() <= now.getTime())
    throw new UsageError(`--expires ${text} is in the past`, command);
  return date.toISOString();
}

/** `ENV:read` / `ENV:read_write` (also `ENV:rw`) → [env, scope]. */
export function parseScope(text: string, command: string): [string, 'read' | 'read_write'] {
  const at = text.lastIndexOf(':');
  const env = at > 0 ? text.slice(0, at) : '';
  const level = at > 0 ? text.slice(at + 1) : '';
  const scope =
    level === 'read' ? 'read' : level === 'read_write' || level === 'rw' ? 'read_write' : null;
  if (!env || !scope)
    throw new UsageError(
      `--scope must look like ENV:read or ENV:read_write, not "${text}"`,
      command,
    );
  return [env, scope];
}
