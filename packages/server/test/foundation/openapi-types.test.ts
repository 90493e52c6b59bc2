import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import ts from 'typescript';
import {
  servedDocument,
  STRICT_OPTIONS,
  writeGeneratedTypes,
  type GeneratedTypes,
} from '../support/openapi.js';

/**
 * The served document is what other languages' and tools' clients are generated
 * from: here openapi-typescript turns it into types, and a small client written
 * against them must compile under `strict`, while wrong uses must not.
 */

// A client a TypeScript user would write on the generated types.
const CLIENT = `
import type { components, operations, paths } from './api';

type ProjectList = paths['/v1/projects']['get']['responses']['200']['content']['application/json'];
type NewProject = paths['/v1/projects']['post']['requestBody']['content']['application/json'];
type Created = paths['/v1/projects']['post']['responses']['201']['content']['application/json'];
type ListQuery = NonNullable<paths['/v1/projects']['get']['parameters']['query']>;
type MemberList = operations['listMembers']['responses']['200']['content']['application/json'];
type Invite = operations['inviteMember']['requestBody']['content']['application/json'];
type Secret = operations['getSecretEnvelope']['responses']['200']['content']['application/json']['data'];
type Problem = components['schemas']['Error'];
type NotFound = operations['getProject']['responses']['404']['content']['application/json'];
type Limited = operations['listProjects']['responses']['429']['content']['application/json'];

export async function listProjects(base: string, cookie: string, query: ListQuery = {}): Promise<ProjectList> {
  const search = new URLSearchParams();
  if (query.page !== undefined) search.set('page', String(query.page));
  if (query.sort !== undefined) search.set('sort', query.sort);
  const response = await fetch(\`\${base}/v1/projects?\${search}\`, { headers: { cookie } });
  if (!response.ok) throw new Error(((await response.json()) as Problem).error.message);
  return (await response.json()) as ProjectList;
}

export async function createProject(base: string, cookie: string, body: NewProject): Promise<Created['data']> {
  const response = await fetch(\`\${base}/v1/projects\`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return ((await response.json()) as Created).data;
}

export const pages = (list: ProjectList): number => list.pagination.total_pages;
export const names = (list: ProjectList): string[] => list.data.map((p) => p.name);
export const emails = (list: MemberList): string[] => list.data.map((m) => m.user.email);
export const invite: Invite = { email: 'a@example.org', role: 'developer' };
export const version = (s: Secret): number => s.version;
export const missing: NotFound = { error: { code: 'not_found', message: 'Project not found' } };
export const limited: Limited = { error: { code: 'rate_limited', message: 'Slow down', request_id: 'req_1' } };
export const sort: ListQuery['sort'] = 'name';
`;

// Each line is wrong in one way the generated types must catch.
const WRONG = [
  // a field the response does not have
  `export const a = (l: paths['/v1/projects']['get']['responses']['200']['content']['application/json']) => l.data[0]?.owner;`,
  // a role that does not exist
  `export const b: operations['inviteMember']['requestBody']['content']['application/json'] = { email: 'a@example.org', role: 'owner' };`,
  // a project name must be a string
  `export const c: paths['/v1/projects']['post']['requestBody']['content']['application/json'] = { name: 42 };`,
  // an error code the API never sends
  `export const d: components['schemas']['Error'] = { error: { code: 'oops', message: 'x' } };`,
  // a path the API does not have
  `export type E = paths['/v1/project']['get'];`,
  // an operation id that does not exist
  `export type F = operations['listProject'];`,
  // a sort field projects cannot be sorted by
  `export const g: NonNullable<paths['/v1/projects']['get']['parameters']['query']>['sort'] = 'size';`,
];

function typeCheck(dir: string, file: string): ts.Diagnostic[] {
  const program = ts.createProgram([join(dir, file)], STRICT_OPTIONS);
  return [...ts.getPreEmitDiagnostics(program)];
}

const show = (d: ts.Diagnostic) => {
  const where =
    d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
  return `${d.file?.fileName ?? ''}:${where ? where.line + 1 : '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
};

describe('types generated from the OpenAPI document', () => {
  let generated: GeneratedTypes;
  let dir: string;
  before(async () => {
    generated = await writeGeneratedTypes(await servedDocument());
    dir = generated.dir;
  });
  after(() => generated?.remove());

  it('a client written against them compiles under strict', () => {
    writeFileSync(join(dir, 'client.ts'), CLIENT.replace("'./api'", "'./api.js'"));
    const problems = typeCheck(dir, 'client.ts').map(show);
    assert.deepEqual(problems, []);
  });

  it('every wrong use fails to compile, each on its own line', () => {
    const header = "import type { components, operations, paths } from './api.js';\n";
    writeFileSync(join(dir, 'wrong.ts'), header + WRONG.join('\n') + '\n');
    const diagnostics = typeCheck(dir, 'wrong.ts');
    const lines = new Set(
      diagnostics
        .filter((d) => d.file?.fileName.endsWith('wrong.ts') && d.start !== undefined)
        .map((d) => d.file!.getLineAndCharacterOfPosition(d.start!).line),
    );
    const uncaught = WRONG.filter((_, i) => !lines.has(i + 1));
    assert.deepEqual(uncaught, [], diagnostics.map(show).join('\n'));
    // …and nothing else in that file is wrong: the header compiles.
    assert.equal(lines.has(0), false, diagnostics.map(show).join('\n'));
  });
});
