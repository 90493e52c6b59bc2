import { Type, type TSchema } from 'typebox';

/** Form A success envelope for one resource: `{ data }`. */
export const DataEnvelope = <T extends TSchema>(data: T) =>
  Type.Object({ data }, { additionalProperties: false });

const Pagination = Type.Object(
  {
    page: Type.Integer(),
    per_page: Type.Integer(),
    total: Type.Integer(),
    total_pages: Type.Integer(),
  },
  { additionalProperties: false, $id: 'Pagination' },
);

/** Form A list envelope: `{ data: [...], pagination }`. */
export const ListEnvelope = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), pagination: Pagination }, { additionalProperties: false });

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String(),
        message: Type.String(),
        request_id: Type.Optional(Type.String()),
        details: Type.Optional(
          Type.Array(
            Type.Object(
              { field: Type.String(), issue: Type.String() },
              { additionalProperties: true },
            ),
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** A field that may be `null`. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** ISO 8601 UTC timestamp with milliseconds and `Z`. */
export const Timestamp = Type.String({ format: 'date-time' });

export const ok = <T>(data: T) => ({ data });
