import { Type, type TProperties } from 'typebox';
import { toCount } from '../db/database.js';

const MAX_PER_PAGE = 100;
const DEFAULT_PER_PAGE = 20;

export interface ListParams<S extends string = string> {
  page: number;
  per_page: number;
  sort: S;
  order: 'asc' | 'desc';
}

/**
 * The query schema of a list route: `page`, `per_page` (default 20, max 100),
 * `sort` (the resource's allow-list, default `created_at` when allowed),
 * `order` (`asc`/`desc`, default `desc`), plus the route's own filters.
 * Bounds live in the schema, so a bad value is a `400 validation_error`
 * naming the parameter before any handler runs.
 */
export function listQuerySchema<
  const S extends readonly [string, ...string[]],
  P extends TProperties,
>(sortable: S, filters: P = {} as P) {
  const defaultSort = sortable.includes('created_at') ? 'created_at' : sortable[0];
  return Type.Object(
    {
      page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
      per_page: Type.Integer({ minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE }),
      // One sortable field is that literal, not a union of one (tools flag `anyOf` of one schema).
      sort: (sortable.length === 1
        ? Type.Literal(defaultSort, { default: defaultSort })
        : Type.Union(
            sortable.map((s) => Type.Literal(s)),
            { default: defaultSort },
          )) as unknown as ReturnType<typeof Type.Unsafe<S[number]>>,
      order: Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' }),
      ...filters,
    },
    { additionalProperties: false },
  );
}

export function paginationOf(
  params: { page: number; per_page: number },
  total: number | string | bigint,
) {
  const count = toCount(total);
  return {
    page: params.page,
    per_page: params.per_page,
    total: count,
    total_pages: Math.ceil(count / params.per_page),
  };
}

/** What a service returns for a list: one page of items and the count across all pages. */
export interface Page<T> {
  items: T[];
  total: number;
}

/** The body of a list route, `{ data, pagination }`, from the page a service returned. */
export const listBody = <T>(page: Page<T>, params: { page: number; per_page: number }) => ({
  data: page.items,
  pagination: paginationOf(params, page.total),
});

export const offsetOf = (params: { page: number; per_page: number }) =>
  (params.page - 1) * params.per_page;
