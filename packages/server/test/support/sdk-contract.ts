import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { STRICT_OPTIONS, writeGeneratedTypes } from './openapi.js';

/**
 * Compares the SDK's hand-written API types with the types openapi-typescript
 * generates from the served document, and says every way they differ.
 *
 * Each call of `client.request<T>(method, path)` or `client.requestPage<T>(…)`
 * (or `client.openStream(path)`, a GET answered with a stream: called, no shape)
 * in packages/sdk/src/client is matched to the operation of that method and
 * path (paths built with `apiPath` or a helper returning one resolve too): `T`
 * must have the shape of the success response's `data` (of one item of it for
 * a page), and `void` where the answer is 204. Besides those: the SDK's
 * `Pagination` and `ApiErrorCode` and `ApiErrorDetail` against the document's.
 *
 * A shape is what a caller can rely on: the object's fields, which of them are
 * optional, and each field's type down to string literals and `null`. A
 * difference reads `where: what`, e.g. `getProject 200 data.owner: in the API,
 * not in the SDK`.
 */

const sdkClientDir = new URL('../../../sdk/src/client/', import.meta.url).pathname;
const methods = ['get', 'put', 'post', 'delete', 'patch', 'head'] as const;

export interface Contract {
  differences: string[];
  /** Operations no SDK call reaches, by operationId. */
  uncalled: string[];
}

export async function sdkContract(doc: OpenAPI3): Promise<Contract> {
  const generated = await writeGeneratedTypes(doc);
  try {
    const sdkFiles = readdirSync(sdkClientDir)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(sdkClientDir, f));
    const program = ts.createProgram([generated.file, ...sdkFiles], {
      ...STRICT_OPTIONS,
      customConditions: ['development'],
    });
    return compare(program, doc, generated.file, sdkFiles);
  } finally {
    generated.remove();
  }
}

// ---- Shapes -------------------------------------------------------------------

type Shape =
  | { kind: 'leaf'; text: string }
  | { kind: 'array'; of: Shape }
  | { kind: 'union'; of: Shape[] }
  | {
      kind: 'object';
      fields: Map<string, { optional: boolean; shape: Shape }>;
      index: Shape | null;
    };

const primitive = ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike | ts.TypeFlags.BooleanLike;

const leaf = (text: string): Shape => ({ kind: 'leaf', text });

function show(s: Shape): string {
  switch (s.kind) {
    case 'leaf':
      return s.text;
    case 'array':
      return `${s.of.kind === 'union' ? `(${show(s.of)})` : show(s.of)}[]`;
    case 'union':
      return s.of.map(show).join(' | ');
    case 'object': {
      const fields = [...s.fields].map(
        ([k, f]) => `${k}${f.optional ? '?' : ''}: ${show(f.shape)}`,
      );
      if (s.index) fields.push(`[key: string]: ${show(s.index)}`);
      return fields.length ? `{ ${fields.join('; ')} }` : '{}';
    }
  }
}

function shapeOf(checker: ts.TypeChecker, type: ts.Type, depth = 0): Shape {
  if (depth > 12) return leaf('(too deep)');
  const f = type.flags;
  if (f & ts.TypeFlags.Any) return leaf('any');
  if (f & ts.TypeFlags.Unknown) return leaf('unknown');
  if (f & ts.TypeFlags.Never) return leaf('never');
  if (f & ts.TypeFlags.Void) return leaf('void');
  if (f & ts.TypeFlags.Undefined) return leaf('undefined');
  if (f & ts.TypeFlags.Null) return leaf('null');
  if (f & ts.TypeFlags.Boolean) return leaf('boolean');
  if (f & ts.TypeFlags.String) return leaf('string');
  if (f & ts.TypeFlags.Number) return leaf('number');
  if (f & ts.TypeFlags.StringLiteral)
    return leaf(JSON.stringify((type as ts.StringLiteralType).value));
  if (f & ts.TypeFlags.NumberLiteral) return leaf(String((type as ts.NumberLiteralType).value));
  if (f & ts.TypeFlags.BooleanLiteral) return leaf(checker.typeToString(type));
  if (type.isUnion()) return unionOf(type.types.map((t) => shapeOf(checker, t, depth + 1)));
  if (type.isIntersection() && type.types.some((t) => t.flags & primitive)) {
    // `string & {}`: an open string, as an SDK writes a union the server may extend.
    return leaf(type.types.map((t) => show(shapeOf(checker, t, depth + 1))).join(' & '));
  }
  if (checker.isArrayType(type)) {
    const [item] = checker.getTypeArguments(type as ts.TypeReference);
    return { kind: 'array', of: item ? shapeOf(checker, item, depth + 1) : leaf('unknown') };
  }
  const fields = new Map<string, { optional: boolean; shape: Shape }>();
  for (const symbol of checker.getPropertiesOfType(type)) {
    const optional = (symbol.flags & ts.SymbolFlags.Optional) !== 0;
    const fieldType = checker.getTypeOfSymbol(symbol);
    // An optional field reads `T | undefined`: its shape is `T`, its optionality said apart.
    const defined =
      optional && fieldType.isUnion()
        ? fieldType.types.filter((t) => !(t.flags & ts.TypeFlags.Undefined))
        : [fieldType];
    const shapes = defined.map((t) => shapeOf(checker, t, depth + 1));
    fields.set(symbol.name, {
      optional,
      shape: shapes.length === 1 ? shapes[0]! : unionOf(shapes),
    });
  }
  const index = checker
    .getIndexInfosOfType(type)
    .find((i) => i.keyType.flags & ts.TypeFlags.String);
  return {
    kind: 'object',
    fields: new Map([...fields].sort(([a], [b]) => a.localeCompare(b))),
    index: index ? shapeOf(checker, index.type, depth + 1) : null,
  };
}

function unionOf(shapes: Shape[]): Shape {
  // `boolean | null` arrives as `true | false | null`.
  const texts = new Set(shapes.map(show));
  const of =
    texts.has('true') && texts.has('false')
      ? [leaf('boolean'), ...shapes.filter((m) => !['true', 'false'].includes(show(m)))]
      : shapes;
  return { kind: 'union', of: of.sort((a, b) => show(a).localeCompare(show(b))) };
}

/** Every way `sdk` and `api` differ, as `where: what` lines. */
function diff(where: string, sdk: Shape, api: Shape, out: string[]): void {
  if (show(sdk) === show(api)) return;
  if (sdk.kind === 'object' && api.kind === 'object') {
    for (const name of new Set([...sdk.fields.keys(), ...api.fields.keys()])) {
      const s = sdk.fields.get(name);
      const a = api.fields.get(name);
      const at = `${where}.${name}`;
      if (!a) out.push(`${at}: in the SDK, not in the API`);
      else if (!s) out.push(`${at}: in the API, not in the SDK`);
      else {
        if (s.optional !== a.optional) {
          out.push(
            `${at}: ${s.optional ? 'optional' : 'required'} in the SDK, ${a.optional ? 'optional' : 'required'} in the API`,
          );
        }
        diff(at, s.shape, a.shape, out);
      }
    }
    if (show(sdk.index ?? leaf('none')) !== show(api.index ?? leaf('none'))) {
      out.push(
        `${where}[key]: SDK ${sdk.index ? show(sdk.index) : 'none'}, API ${api.index ? show(api.index) : 'none'}`,
      );
    }
    return;
  }
  if (sdk.kind === 'array' && api.kind === 'array') return diff(`${where}[]`, sdk.of, api.of, out);
  // `T | null` on both sides, differing inside T: say where inside.
  if (sdk.kind === 'union' && api.kind === 'union' && sdk.of.length === api.of.length) {
    const structured = (s: Shape) => s.kind === 'object' || s.kind === 'array';
    const sRest = sdk.of
      .filter((s) => !structured(s))
      .map(show)
      .join(' | ');
    const aRest = api.of
      .filter((s) => !structured(s))
      .map(show)
      .join(' | ');
    const sInner = sdk.of.filter(structured);
    const aInner = api.of.filter(structured);
    if (sRest === aRest && sInner.length === 1 && aInner.length === 1) {
      return diff(where, sInner[0]!, aInner[0]!, out);
    }
  }
  const members = (s: Shape) => (s.kind === 'union' ? s.of : [s]).map(show);
  const sdkOnly = members(sdk).filter((m) => !members(api).includes(m));
  const apiOnly = members(api).filter((m) => !members(sdk).includes(m));
  if (sdkOnly.length + apiOnly.length < members(sdk).length + members(api).length) {
    // Unions sharing some members: name the ones that differ.
    if (sdkOnly.length) out.push(`${where}: ${sdkOnly.join(' | ')} in the SDK, not in the API`);
    if (apiOnly.length) out.push(`${where}: ${apiOnly.join(' | ')} in the API, not in the SDK`);
    return;
  }
  out.push(`${where}: SDK ${show(sdk)}, API ${show(api)}`);
}

// ---- Matching calls to operations -------------------------------------------------

interface Call {
  method: string;
  /** The path with every parameter as `{}`. */
  path: string;
  page: boolean;
  type: ts.Type;
  at: string;
}

const templatePath = (path: string) => path.replace(/\{[^}]+\}/g, '{}');

function compare(
  program: ts.Program,
  doc: OpenAPI3,
  apiFile: string,
  sdkFiles: string[],
): Contract {
  const checker = program.getTypeChecker();
  const differences: string[] = [];
  const calls: Call[] = [];

  /** The path a call's second argument builds, or null when it cannot be read off the source. */
  function pathOf(e: ts.Expression): string | null {
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
    if (ts.isTaggedTemplateExpression(e) && e.tag.getText() === 'apiPath') {
      const t = e.template;
      if (ts.isNoSubstitutionTemplateLiteral(t)) return t.text;
      return t.head.text + t.templateSpans.map((s) => `{}${s.literal.text}`).join('');
    }
    if (ts.isTemplateExpression(e)) {
      let out = e.head.text;
      for (const span of e.templateSpans) {
        const inner = pathOf(span.expression);
        if (inner === null) return null;
        out += inner + span.literal.text;
      }
      return out;
    }
    const callee = ts.isCallExpression(e) ? e.expression : e;
    if (!ts.isIdentifier(callee)) return null;
    const declaration = checker.getSymbolAtLocation(callee)?.valueDeclaration;
    if (!declaration || !ts.isVariableDeclaration(declaration) || !declaration.initializer)
      return null;
    const init = declaration.initializer;
    if (ts.isCallExpression(e)) {
      return ts.isArrowFunction(init) && !ts.isBlock(init.body) ? pathOf(init.body) : null;
    }
    return pathOf(init);
  }

  const streamed = new Set<string>();
  for (const file of sdkFiles) {
    const source = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      // `client.openStream(path)`: a GET whose answer is a stream (Server-Sent
      // Events), not a JSON body; it counts as a call, with no shape to compare.
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === 'openStream' &&
        node.arguments.length >= 1
      ) {
        const path = pathOf(node.arguments[0]!);
        if (path !== null) streamed.add(`get ${templatePath(path)}`);
      }
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        ['request', 'requestPage'].includes(node.expression.name.text) &&
        node.typeArguments?.length === 1 &&
        node.arguments.length >= 2 &&
        ts.isStringLiteral(node.arguments[0]!)
      ) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart());
        const at = `${file.slice(sdkClientDir.length)}:${line + 1}`;
        const path = pathOf(node.arguments[1]!);
        if (path === null) differences.push(`${at}: the path of this call cannot be read`);
        else {
          calls.push({
            method: node.arguments[0].text.toLowerCase(),
            path: templatePath(path),
            page: node.expression.name.text === 'requestPage',
            type: checker.getTypeFromTypeNode(node.typeArguments[0]!),
            at,
          });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }

  // The generated types, navigated by property name.
  const api = program.getSourceFile(apiFile)!;
  const exported = (source: ts.SourceFile, name: string): ts.Type => {
    const symbol = checker
      .getExportsOfModule(checker.getSymbolAtLocation(source)!)
      .find((s) => s.name === name);
    if (!symbol) throw new Error(`${source.fileName} exports no ${name}`);
    return checker.getDeclaredTypeOfSymbol(symbol);
  };
  const field = (type: ts.Type | undefined, name: string): ts.Type | undefined => {
    const symbol = type && checker.getPropertyOfType(type, name);
    return symbol && checker.getTypeOfSymbol(symbol);
  };
  const operations = exported(api, 'operations');
  const components = exported(api, 'components');

  const uncalled: string[] = [];
  const paths = (doc.paths ?? {}) as Record<string, Record<string, unknown>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of methods) {
      const operation = item[method] as
        { operationId: string; responses: Record<string, { content?: unknown }> } | undefined;
      if (!operation) continue;
      const { operationId } = operation;
      const mine = calls.filter((c) => c.method === method && c.path === templatePath(path));
      if (mine.length === 0 && !streamed.has(`${method} ${templatePath(path)}`))
        uncalled.push(operationId);
      const responses = field(field(operations, operationId), 'responses');
      for (const status of Object.keys(operation.responses).filter((s) => /^2\d\d$/.test(s))) {
        const body = operation.responses[status]!.content
          ? field(field(field(responses, status), 'content'), 'application/json')
          : undefined;
        for (const call of mine) {
          const where = `${operationId} ${status}`;
          const sdk = shapeOf(checker, call.type);
          if (!body) {
            if (show(sdk) !== 'void')
              differences.push(`${where}: SDK ${show(sdk)} (${call.at}), API no body`);
            continue;
          }
          const data = field(body, 'data');
          if (!data) {
            differences.push(`${where}: the API's answer has no data (${call.at})`);
            continue;
          }
          if (call.page) {
            const bodyFields = checker
              .getPropertiesOfType(body)
              .map((s) => s.name)
              .sort();
            if (bodyFields.join() !== 'data,pagination') {
              differences.push(`${where}: a page of { ${bodyFields.join(', ')} } (${call.at})`);
            }
            const [item] = checker.isArrayType(data)
              ? checker.getTypeArguments(data as ts.TypeReference)
              : [];
            if (!item) differences.push(`${where}: SDK a page (${call.at}), API data is no list`);
            else diff(`${where} data[]`, sdk, shapeOf(checker, item), differences);
          } else {
            diff(`${where} data`, sdk, shapeOf(checker, data), differences);
          }
        }
      }
    }
  }

  // What every list and every error shares.
  const http = program.getSourceFile(join(sdkClientDir, 'http.ts'))!;
  const errors = program.getSourceFile(join(sdkClientDir, 'errors.ts'))!;
  const schemas = field(components, 'schemas');
  diff(
    'Pagination',
    shapeOf(checker, exported(http, 'Pagination')),
    shapeOf(checker, field(schemas, 'Pagination')!),
    differences,
  );
  const error = field(field(schemas, 'Error'), 'error');
  diff(
    'ApiErrorCode',
    shapeOf(checker, exported(errors, 'ApiErrorCode')),
    shapeOf(checker, field(error, 'code')!),
    differences,
  );
  const details = field(error, 'details');
  const [detail] =
    details && checker.isArrayType(checker.getNonNullableType(details))
      ? checker.getTypeArguments(checker.getNonNullableType(details) as ts.TypeReference)
      : [];
  diff(
    'ApiErrorDetail',
    shapeOf(checker, exported(errors, 'ApiErrorDetail')),
    detail ? shapeOf(checker, detail) : leaf('none'),
    differences,
  );

  // Two calls of one operation with one type say the same thing once.
  return { differences: [...new Set(differences)], uncalled: uncalled.sort() };
}
