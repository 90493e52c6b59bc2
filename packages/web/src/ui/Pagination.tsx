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
  // "1 member", "2 members": the label is the plural.
  const counted = (n: number) => `${n} ${n === 1 ? label.replace(/s$/, '') : label}`;
  if (!info || info.total_pages <= 1) {
    return info ? <p className="muted small">{counted(info.total)}</p> : null;
  }
  return (
    <nav className="pagination" aria-label={`Pages of ${label}`}>
      <button type="button" disabled={info.page <= 1} onClick={() => onPage(info.page - 1)}>
        Previous
      </button>
      <span className="muted small">
        Page {info.page} of {info.total_pages} · {counted(info.total)}
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
