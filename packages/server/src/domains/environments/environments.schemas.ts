import { Type, type Static } from 'typebox';
import { listQuerySchema } from '../../http/pagination.js';
import { Timestamp } from '../../http/schemas.js';

/** Lower-case letters, digits and inner hyphens, 1–64 characters; unique per project. */
const SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$';

export const Environment = Type.Object(
  {
    id: Type.String({ description: '`env_…`' }),
    project_id: Type.String(),
    name: Type.String(),
    slug: Type.String({ description: 'URL-safe handle, unique in the project; usable as `{env}`' }),
    secret_count: Type.Integer({ description: 'How many secrets the environment holds' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

const Name = Type.String({
  minLength: 1,
  maxLength: 100,
  description: 'Display name, 1–100 characters',
});
const Slug = Type.String({
  pattern: SLUG_PATTERN,
  description: 'Lower-case letters, digits and hyphens (not first or last), at most 64 characters',
});

export const CreateEnvironmentBody = Type.Object(
  {
    name: Name,
    slug: Type.Optional(Slug),
  },
  { additionalProperties: false },
);

export const UpdateEnvironmentBody = Type.Object(
  {
    name: Type.Optional(Name),
    slug: Type.Optional(Slug),
  },
  { additionalProperties: false, minProperties: 1 },
);

const ENVIRONMENT_SORTS = ['created_at', 'updated_at', 'name', 'slug'] as const;
export const EnvironmentListQuery = listQuerySchema(ENVIRONMENT_SORTS, {});

export type CreateEnvironmentInput = Static<typeof CreateEnvironmentBody>;
export type UpdateEnvironmentInput = Static<typeof UpdateEnvironmentBody>;
export type EnvironmentObject = Static<typeof Environment>;
