/**
 * The CLI's two kinds of failure. Every other error (the SDK's typed API and
 * network errors included) is turned into one stderr line by `describeError`.
 */

/** Bad invocation: unknown option, missing argument. Exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command whose `--help` the user should read, e.g. `secrets set`. */
    readonly command?: string,
  ) {
    super(message);
  }
}

/** A failure the CLI itself detected (no project linked, unsafe file, …). Exit code 1. */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** 127/126 when `run` cannot start the child, as shells do. */
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

interface CodedError {
  code?: unknown;
  status?: unknown;
  details?: unknown;
  name?: unknown;
}

/** `<message> (<code>)` for any thrown value; the code is the API error code when there is one. */
export function describeError(err: unknown): { line: string; exitCode: number } {
  if (err instanceof UsageError) {
    const hint = err.command ? `; see coffer ${err.command} --help` : '';
    return { line: `${err.message}${hint} (usage)`, exitCode: EXIT_USAGE };
  }
  if (err instanceof CliError) {
    return { line: `${oneLine(err.message)} (${err.code})`, exitCode: err.exitCode };
  }
  if (err instanceof Error) {
    const coded = err as Error & CodedError;
    const code = typeof coded.code === 'string' ? coded.code : (CODE_BY_NAME[err.name] ?? 'error');
    const message = oneLine(err.message || String(err));
    const detail = detailsSuffix(coded.details);
    return { line: `${message}${detail} (${code})`, exitCode: EXIT_ERROR };
  }
  return { line: `${oneLine(String(err))} (error)`, exitCode: EXIT_ERROR };
}

/** Codes for the SDK's errors that carry none of their own. */
const CODE_BY_NAME: Record<string, string> = {
  CofferNetworkError: 'network_error',
  DotenvSyntaxError: 'invalid_dotenv',
  SyntaxError: 'invalid_input',
  TypeError: 'invalid_input',
};

/** Validation details (`field: issue`) make "invalid request" errors actionable. */
function detailsSuffix(details: unknown): string {
  if (!Array.isArray(details) || details.length === 0) return '';
  const parts = details
    .slice(0, 3)
    .map((d: { field?: unknown; issue?: unknown }) =>
      typeof d?.field === 'string' ? `${d.field}: ${String(d.issue ?? 'invalid')}` : null,
    )
    .filter((p): p is string => p !== null);
  return parts.length > 0 ? ` [${parts.join(', ')}]` : '';
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').trim();
