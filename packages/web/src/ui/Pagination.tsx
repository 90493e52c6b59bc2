import type { Pagination as PageInfo } from '@coffer/sdk';

/** Previous / next with "page 2 of 5 · 93 items"; hidden when everything fits on one page. */
export function Pagination({
  info,
  onPage,
  label,
}: {
  info: PageInfo | undefined;
  onPage: (page: number) => void;
  label: string;
}) {
  if (!info || info.total_pages <= 1) {
    return info ? (
      <p className="muted small">
        {info.total} {label}
      </p>
    ) : null;
  }
  return (
    <nav className="pagination" aria-label={`Pages of ${label}`}>
      <button type="button" disabled={info.page <= 1} onClick={() => onPage(info.page - 1)}>
        Previous
      </button>
      <span className="muted small">
        Page {info.page} of {info.total_pages} · {info.total} {label}
      </span>
      <button
        type="button"
        disabled={info.page >= info.total_pages}
        onClick={() => onPage(info.page + 1)}
      >
        Next
      </button>
    </nav>
  );
}
