/**
 * What a database error means, whichever driver raised it (pg's SQLSTATE codes,
 * the SQLite drivers' `SQLITE_…` codes or message): the one place that reads
 * driver error codes.
 */
type DriverErrorKind = 'unique_violation' | 'deadlock';

export function driverErrorKind(error: unknown): DriverErrorKind | null {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = e?.code;
  if (
    code === '23505' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    (typeof e?.message === 'string' && e.message.includes('UNIQUE constraint failed'))
  )
    return 'unique_violation';
  if (code === '40P01') return 'deadlock';
  return null;
}
