import { Type } from 'typebox';
import { idPattern } from '../ids.js';

// The path parameters every project route shares. `{project_id}` has three
// forms because route families published different ones (a description; a
// `proj_…` pattern, which answers a malformed id with 400 rather than 404;
// length bounds): merging them would change answers and the OpenAPI document,
// so they live here side by side until a change of their own does that.

/** `{project_id}` as the project, member and invitation routes document it. */
export const ProjectParams = Type.Object(
  { project_id: Type.String({ description: 'Project id, `proj_…`' }) },
  { additionalProperties: false },
);

/** `{project_id}` checked against the id pattern (vault, tokens, key trust). */
export const ProjectIdParams = Type.Object(
  { project_id: Type.String({ pattern: idPattern('project') }) },
  { additionalProperties: false },
);

const projectRef = () =>
  Type.String({ minLength: 1, maxLength: 64, description: 'Project id (`proj_…`)' });

/** `{project_id}` as the environment routes document it. */
export const ProjectRefParams = Type.Object({ project_id: projectRef() });

/** `{project_id}` and `{env}`: the environment and secret routes. */
export const EnvironmentParams = Type.Object({
  project_id: projectRef(),
  env: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'Environment id (`env_…`) or slug (e.g. `production`)',
  }),
});
