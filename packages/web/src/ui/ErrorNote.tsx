import { toProblem } from '../lib/errors';

/** An error in words, next to what caused it; network failures offer a retry. */
export function ErrorNote({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  const problem = toProblem(error);
  return (
    <div className="error-note" role="alert">
      <p>{problem.message}</p>
      {problem.detail ? <p className="small">{problem.detail}</p> : null}
      {problem.requestId ? <p className="muted small">Request id {problem.requestId}</p> : null}
      {problem.retryable && onRetry ? (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}
