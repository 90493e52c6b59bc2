import { sql, type Expression, type SelectQueryBuilder } from 'kysely';
import type { DialectName } from './database.js';
import { offsetOf, type ListParams } from '../http/pagination.js';

/** How one allowed `sort` value orders rows. */
export interface SortColumn {
  /** Qualified column, e.g. `members.created_at`. */
  readonly column: string;
  /** Human text (names, e-mails): compared case-insensitively, byte-wise, the same on both dialects. */
  readonly text?: boolean;
  /** Nullable columns put their nulls last in both directions (SQLite and PostgreSQL disagree by default). */
  readonly nullable?: boolean;
}

/**
 * Orders a list query by an allow-listed column and then by `tieBreak` (the
 * row id) in the same direction, so pages are stable and identical on SQLite
 * and PostgreSQL (PostgreSQL would otherwise sort text by the server locale).
 */
export function orderBySort<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  dialect: DialectName,
  sort: SortColumn,
  order: 'asc' | 'desc',
  tieBreak: string,
): SelectQueryBuilder<DB, TB, O> {
  const ref = sql.ref(sort.column);
  const expr: Expression<unknown> = sort.text ? sql`lower(${ref})` : ref;
  return query
    .orderBy(expr, (ob) => {
      let item = order === 'asc' ? ob.asc() : ob.desc();
      if (sort.text && dialect === 'postgres') item = item.collate('C');
      if (sort.nullable) item = item.nullsLast();
      return item;
    })
    .orderBy(sql.ref(tieBreak), order);
}

/** One page of a list query: ordered by the allow-listed `sort` (then `tieBreak`), limited and offset. */
export function pageOf<DB, TB extends keyof DB, O, S extends string>(
  query: SelectQueryBuilder<DB, TB, O>,
  dialect: DialectName,
  columns: Record<S, SortColumn>,
  params: ListParams<S>,
  tieBreak: string,
): SelectQueryBuilder<DB, TB, O> {
  return orderBySort(query, dialect, columns[params.sort], params.order, tieBreak)
    .limit(params.per_page)
    .offset(offsetOf(params));
}
