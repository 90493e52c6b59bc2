import { Type } from 'typebox';
import { listQuerySchema } from '../../http/pagination.js';
import { DataEnvelope, ListEnvelope, Timestamp } from '../../http/schemas.js';

/** `admin` (everything), `developer` (secrets and environments), `viewer` (read-only). */
export const roleSchema = (
  description = 'admin: everything; developer: secrets and environments, no member management; viewer: read-only',
) =>
  Type.Union([Type.Literal('admin'), Type.Literal('developer'), Type.Literal('viewer')], {
    description,
  });

/** The project as the API shows it; vault fields live under `GET /v1/projects/{p}/vault`. */
const ProjectSchema = Type.Object(
  {
    id: Type.String({ description: '`proj_…`' }),
    name: Type.String(),
    description: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    role: roleSchema(
      "The caller's effective role in the project (an API key's role capped by its creator's)",
    ),
  },
  { additionalProperties: false },
);

const name = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '\\S',
  description: '1–100 characters, not only spaces',
});
const description = Type.String({ maxLength: 1000 });

export const CreateProjectBody = Type.Object(
  { name, description: Type.Optional(description) },
  { additionalProperties: false },
);

export const UpdateProjectBody = Type.Object(
  { name: Type.Optional(name), description: Type.Optional(description) },
  { additionalProperties: false, minProperties: 1 },
);

export const PROJECT_SORTS = ['created_at', 'name', 'updated_at'] as const;
export const ListProjectsQuery = listQuerySchema(PROJECT_SORTS, {});

export const ProjectResponse = DataEnvelope(ProjectSchema);
export const ProjectListResponse = ListEnvelope(ProjectSchema);
