import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { servedDocument } from '../support/openapi.js';

/** The widest integer both databases store in an `integer` column (PostgreSQL's int4). */
const INT4_MAX = 2 ** 31 - 1;
const INT4_MIN = -(2 ** 31);

interface Schema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  $ref?: string;
}

/** Every numeric schema under `schema` that a database could not store, with where it is. */
function unbounded(
  schema: Schema | undefined,
  where: string,
  resolve: (ref: string) => Schema,
  seen = new Set<Schema>(),
): string[] {
  if (!schema || seen.has(schema)) return [];
  seen.add(schema);
  if (schema.$ref) return unbounded(resolve(schema.$ref), where, resolve, seen);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const out: string[] = [];
  if (types.includes('integer') || types.includes('number')) {
    const ok =
      typeof schema.minimum === 'number' &&
      typeof schema.maximum === 'number' &&
      schema.minimum >= INT4_MIN &&
      schema.maximum <= INT4_MAX;
    if (!ok) out.push(`${where} (minimum ${schema.minimum}, maximum ${schema.maximum})`);
  }
  for (const [name, child] of Object.entries(schema.properties ?? {}))
    out.push(...unbounded(child, `${where}.${name}`, resolve, seen));
  if (typeof schema.additionalProperties === 'object')
    out.push(...unbounded(schema.additionalProperties, `${where}.*`, resolve, seen));
  out.push(...unbounded(schema.items, `${where}[]`, resolve, seen));
  for (const list of [schema.anyOf, schema.oneOf, schema.allOf])
    for (const [i, child] of (list ?? []).entries())
      out.push(...unbounded(child, `${where}|${i}`, resolve, seen));
  return out;
}

describe('request schemas: every number has bounds both databases can store', () => {
  it('walks every operation of the OpenAPI document: path, query, header and body', async () => {
    const doc = (await servedDocument()) as unknown as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
      components?: { schemas?: Record<string, Schema> };
    };
    const resolve = (ref: string) => {
      const name = ref.replace(/^#\/components\/schemas\//, '');
      const found = doc.components?.schemas?.[name];
      assert.ok(found, `unresolved ${ref}`);
      return found;
    };
    const problems: string[] = [];
    let numbers = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const at = `${method.toUpperCase()} ${path}`;
        const parameters = (op.parameters ?? []) as { in: string; name: string; schema?: Schema }[];
        for (const p of parameters)
          problems.push(...unbounded(p.schema, `${at} ${p.in} ${p.name}`, resolve));
        const body = op.requestBody as
          { content?: Record<string, { schema?: Schema }> } | undefined;
        for (const [type, media] of Object.entries(body?.content ?? {}))
          problems.push(...unbounded(media.schema, `${at} body (${type})`, resolve));
        numbers += JSON.stringify(op).match(/"type":"(integer|number)"/g)?.length ?? 0;
      }
    }
    assert.ok(numbers > 0, 'the walk found no numbers at all');
    assert.deepEqual(problems, []);
  });
});
