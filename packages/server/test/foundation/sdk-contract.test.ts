import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { OpenAPI3 } from 'openapi-typescript';
import { servedDocument } from '../support/openapi.js';
import { sdkContract, type Contract } from '../support/sdk-contract.js';

/**
 * The SDK's API types (packages/sdk/src/client) are written by hand, with the
 * names and comments its users (the CLI, the dashboard) import. This holds them
 * to the served OpenAPI document: every response type the SDK reads, field by
 * field, with each field's optionality and type, and the error codes. A field
 * added, removed or renamed on either side, or a type or optionality changed,
 * fails here until the SDK follows or the difference is listed below with why.
 */

/** The differences the SDK keeps on purpose. */
const ACCEPTED = [
  // Open unions: the SDK names the kinds it knows and still types any other string.
  'listAuditEvents 200 data[].credential.kind: SDK "api_key" | "ci_token" | "session" | string & {}, API string',
  // Fields servers before them did not send: the SDK reads them as optional.
  'getVault 200 data.grants[].granter_email: optional in the SDK, required in the API',
  'getVault 200 data.grants[].granter_public_key: optional in the SDK, required in the API',
  'getVaultSnapshot 200 data.api_keys[].created_by: optional in the SDK, required in the API',
  'getVaultSnapshot 200 data.ci_tokens[].created_by: optional in the SDK, required in the API',
  'getVaultSnapshot 200 data.introductions: optional in the SDK, required in the API',
  'getVaultSnapshot 200 data.members[].grant: optional in the SDK, required in the API',
  // The SDK's own code for an answer that is not the API's error body (a proxy's HTML page).
  'ApiErrorCode: "unexpected_response" in the SDK, not in the API',
];

/** Operations the SDK has no call for: the probes are for load balancers. */
const NOT_IN_SDK = ['getLiveness', 'getReadiness'];

const sorted = (lines: string[]) => [...lines].sort();

/** A schema inside the document, by the keys that lead to it. */
interface Schema {
  properties: Record<string, unknown>;
  required: string[];
  enum: string[];
}
const dig = (value: unknown, ...keys: string[]): Schema =>
  keys.reduce((v, k) => (v as Record<string, unknown>)[k], value) as Schema;

describe('the SDK against the OpenAPI document', () => {
  let doc: OpenAPI3;
  let contract: Contract;
  before(async () => {
    doc = await servedDocument();
    contract = await sdkContract(doc);
  });

  it("every response type the SDK reads has the document's shape, but for the listed differences", () => {
    assert.deepEqual(sorted(contract.differences), sorted(ACCEPTED));
  });

  it('every operation has an SDK call, but for the probes', () => {
    assert.deepEqual(contract.uncalled, NOT_IN_SDK);
  });

  it('a field renamed, retyped or made optional, or a new error code, is a difference', async () => {
    const drifted = structuredClone(doc);
    const project = dig(
      drifted.paths,
      '/v1/projects/{project_id}',
      'get',
      'responses',
      '200',
      'content',
      'application/json',
      'schema',
      'properties',
      'data',
    );
    project.properties.summary = project.properties.description;
    delete project.properties.description;
    project.properties.name = { type: 'integer' };
    project.required = project.required
      .filter((f) => f !== 'updated_at')
      .map((f) => (f === 'description' ? 'summary' : f));
    const code = dig(
      drifted.components,
      'schemas',
      'Error',
      'properties',
      'error',
      'properties',
      'code',
    );
    code.enum.push('teapot');

    const { differences } = await sdkContract(drifted);
    assert.deepEqual(
      sorted(differences),
      sorted([
        ...ACCEPTED,
        'getProject 200 data.description: in the SDK, not in the API',
        'getProject 200 data.summary: in the API, not in the SDK',
        'getProject 200 data.name: SDK string, API number',
        'getProject 200 data.updated_at: required in the SDK, optional in the API',
        'ApiErrorCode: "teapot" in the API, not in the SDK',
      ]),
    );
  });
});
