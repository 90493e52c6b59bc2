import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { startTestApp } from './app.js';

/** The document exactly as `GET /v1/openapi.json` serves it, from an app of its own. */
export async function servedDocument(): Promise<OpenAPI3> {
  const t = await startTestApp('sqlite');
  try {
    return (await t.request({ method: 'GET', url: '/v1/openapi.json' })).data as OpenAPI3;
  } finally {
    await t.close();
  }
}

/** A throwaway directory holding `api.ts`: openapi-typescript's types for `doc`. */
export interface GeneratedTypes {
  dir: string;
  /** The absolute path of `api.ts`. */
  file: string;
  remove(): void;
}

export async function writeGeneratedTypes(doc: OpenAPI3): Promise<GeneratedTypes> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-openapi-types-'));
  // A module of its own: `.ts` files under a package.json without "type" are CommonJS.
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  const file = join(dir, 'api.ts');
  writeFileSync(file, astToString(await openapiTS(doc)));
  return { dir, file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What a TypeScript user of the generated types compiles with: `strict`, nothing from node. */
export const STRICT_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  types: [],
  skipLibCheck: true,
  noUncheckedIndexedAccess: true,
};
