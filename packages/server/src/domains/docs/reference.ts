export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

interface OpenApiOperation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: unknown;
  }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<
    string,
    { description?: string; content?: Record<string, { schema?: unknown }> }
  >;
}

const escape = (s: string) =>
  s
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');

/** Prints a JSON schema as a compact, readable type: `{ email: string, role: "admin" | … }`. */
function typeOf(schema: unknown, depth = 0): string {
  if (!schema || typeof schema !== 'object' || depth > 6) return 'any';
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.anyOf))
    return (s.anyOf as unknown[]).map((x) => typeOf(x, depth + 1)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((x) => JSON.stringify(x)).join(' | ');
  if (s.type === 'array') return `${typeOf(s.items, depth + 1)}[]`;
  if (s.type === 'object' || s.properties) {
    const props = (s.properties ?? {}) as Record<string, unknown>;
    const required = new Set((s.required as string[] | undefined) ?? []);
    const fields = Object.entries(props).map(
      ([k, v]) =>
        `${'  '.repeat(depth + 1)}${k}${required.has(k) ? '' : '?'}: ${typeOf(v, depth + 1)}`,
    );
    return fields.length ? `{\n${fields.join(',\n')}\n${'  '.repeat(depth)}}` : 'object';
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).join(' | ') : String(s.type ?? 'any');
  const bounds: string[] = [];
  for (const k of [
    'format',
    'pattern',
    'minimum',
    'maximum',
    'minLength',
    'maxLength',
    'default',
  ]) {
    if (s[k] !== undefined) bounds.push(`${k} ${JSON.stringify(s[k])}`);
  }
  return bounds.length ? `${type} (${bounds.join(', ')})` : type;
}

function operation(method: string, path: string, op: OpenApiOperation): string {
  const params = (op.parameters ?? [])
    .map(
      (p) =>
        `<tr><td><code>${escape(p.name)}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : ''}</td><td><code>${escape(typeOf(p.schema))}</code></td><td>${escape(p.description ?? '')}</td></tr>`,
    )
    .join('');
  const body = op.requestBody?.content?.['application/json']?.schema;
  const responses = Object.entries(op.responses ?? {})
    .filter(([status]) => !status.endsWith('XX'))
    .map(([status, r]) => {
      const schema = r.content?.['application/json']?.schema;
      return `<div><b>${status}</b> ${escape(r.description ?? '')}${schema ? `<pre>${escape(typeOf(schema))}</pre>` : ''}</div>`;
    })
    .join('');
  const id = `${method}-${path}`.replace(/[^a-z0-9]+/gi, '-');
  return `<section id="${id}"><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
${op.summary ? `<p>${escape(op.summary)}</p>` : ''}${op.description ? `<p>${escape(op.description)}</p>` : ''}
${params ? `<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>Type</th><th></th></tr>${params}</table>` : ''}
${body ? `<h4>Request body</h4><pre>${escape(typeOf(body))}</pre>` : ''}
<h4>Responses</h4>${responses}<p class="err">Errors: <code>{ "error": { "code", "message", "details"?, "request_id" } }</code></p></section>`;
}

/** The human-readable API reference, rendered once from the OpenAPI document. */
export function renderReference(doc: OpenApiDocument): string {
  const sections: string[] = [];
  const toc: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths).sort(([a], [b]) => a.localeCompare(b))) {
    for (const [method, op] of Object.entries(methods)) {
      sections.push(operation(method, path, op));
      toc.push(
        `<li><a href="#${`${method}-${path}`.replace(/[^a-z0-9]+/gi, '-')}">${method.toUpperCase()} ${escape(path)}</a></li>`,
      );
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(doc.info.title)} reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1b1b1f}
pre{background:#f4f4f6;padding:.6rem;overflow:auto;font-size:13px}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}
.m{font-size:12px;padding:2px 6px;border-radius:3px;color:#fff;background:#555}.get{background:#2563eb}.post{background:#16a34a}.put,.patch{background:#d97706}.delete{background:#dc2626}
section{border-top:1px solid #e5e5e5;padding-top:.5rem}.err{color:#555;font-size:13px}</style></head><body>
<h1>${escape(doc.info.title)} ${escape(doc.info.version)}</h1><p>${escape(doc.info.description ?? '')}</p>
<p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a>.</p>
<h2>Conventions</h2><ul>
<li>Success: <code>{ "data": … }</code>; lists: <code>{ "data": [ … ], "pagination": { page, per_page, total, total_pages } }</code>.</li>
<li>Lists take <code>page</code> (≥ 1), <code>per_page</code> (1–100, default 20), <code>sort</code> (per resource), <code>order</code> (<code>asc</code>|<code>desc</code>, default <code>desc</code>).</li>
<li>Errors: <code>{ "error": { "code", "message", "details": [{ "field", "issue" }] } }</code>. Codes: validation_error 400, unauthenticated / token_expired 401, forbidden 403, not_found 404, method_not_allowed 405, already_member / already_exists / version_conflict 409, payload_too_large 413, unsupported_media_type 415, last_admin 422, rate_limited 429, internal_error 500.</li>
<li>Rate limits per minute: session 100, API key 500, CI token 200; anonymous and <code>/v1/auth/*</code> per IP. Every response has <code>X-RateLimit-Limit</code>, <code>X-RateLimit-Remaining</code>, <code>X-RateLimit-Reset</code> (Unix seconds); 429 adds <code>Retry-After</code>. Several server instances share one budget (through Redis); <code>X-RateLimit-Remaining</code> then counts what the answering instance has seen and reserved, so it may lag requests served by the others.</li>
<li>Authentication: the session cookie (dashboard), or <code>Authorization: Bearer cek_…</code> / <code>ci_…</code> — only the part of the credential before the "."</li>
</ul><h2>Endpoints</h2><ul>${toc.join('')}</ul>${sections.join('\n')}</body></html>`;
}
