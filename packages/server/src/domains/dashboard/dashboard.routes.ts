import { existsSync, realpathSync } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { extname, join, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConstraintStrategy, Handler, HTTPVersion } from 'find-my-way';
import type { SharedDeps } from '../../shared-deps.js';
import type { Config } from '../../config.js';
import { AppError } from '../../errors.js';

/**
 * The dashboard's policy: its own scripts, styles and fonts, WebAssembly (the
 * SDK's crypto), `data:` images, requests to this origin only. No inline script
 * or style, and nothing may frame it.
 */
const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Build outputs under `/assets/` carry a content hash in their name, so they never change. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.gz': 'application/gzip',
};

/** Paths that belong to the API, whatever the dashboard holds: they keep their JSON 404. */
const API_PATHS = ['/v1', '/docs', '/healthz', '/readyz', '/metrics'];

function isDashboardPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  for (const prefix of API_PATHS) {
    if (path.startsWith(prefix) && (path.length === prefix.length || path[prefix.length] === '/'))
      return false;
  }
  return true;
}

/**
 * Routes the catch-all only for dashboard paths. An unknown `/v1/…` path never
 * reaches it, so it stays an API 404 (rate limited, with its headers) rather
 * than a static-file miss that skips the budget.
 */
const dashboardConstraint: ConstraintStrategy<HTTPVersion.V1, string> = {
  name: 'dashboard',
  storage() {
    const handlers = new Map<string, Handler<HTTPVersion.V1>>();
    return {
      get: (value) => handlers.get(value) ?? null,
      set: (value, handler) => void handlers.set(value, handler),
    };
  },
  deriveConstraint: (req: IncomingMessage) => (isDashboardPath(req.url ?? '/') ? 'app' : 'api'),
  mustMatchWhenDerived: false,
};

/** The directory served (its real path), or null when the dashboard is off or not built. */
function servedDir(config: Config): string | null {
  const { enabled, dir } = config.dashboard;
  if (!enabled || !existsSync(join(dir, 'index.html'))) return null;
  return realpathSync(dir);
}

/** Whether this app serves the dashboard (on and built when it was started). */
export function servesDashboard(app: FastifyInstance): boolean {
  return app.hasRoute({ method: 'GET', url: '/*', constraints: { dashboard: 'app' } });
}

/**
 * The web dashboard on the API's origin, so its session cookie and `/v1` calls
 * need no CORS: built files by path (`/assets/…` cached for good, gzip when the
 * build left a `.gz` and the client takes it), `index.html` for every other
 * path (client-side routes). Not rate limited: loading the app must not spend
 * the session's budget.
 */
export async function dashboardRoutes(
  app: FastifyInstance,
  { config }: Pick<SharedDeps, 'config'>,
): Promise<void> {
  const root = servedDir(config);
  if (!root) {
    if (config.dashboard.enabled) {
      app.log.warn(
        { dir: config.dashboard.dir },
        'dashboard not built (no index.html in DASHBOARD_DIR): serving the API only; build it with `node scripts/build.mjs web`',
      );
    }
    return;
  }
  const index = join(root, 'index.html');

  app.addConstraintStrategy(dashboardConstraint);
  app.get(
    '/*',
    {
      constraints: { dashboard: 'app' },
      config: { rateClass: 'none', staticFiles: true },
      schema: { hide: true },
    },
    async (request, reply) => {
      const path = request.url.split('?', 1)[0]!;
      const file = await locate(root, path);
      if (file === null) throw notFound(path);
      if (file !== undefined) return sendFile(request, reply, file, path.startsWith('/assets/'));
      // A script or style that is not there must fail as such, not load the app's HTML.
      if (path.startsWith('/assets/')) throw notFound(path);
      reply.header('content-security-policy', DASHBOARD_CSP).header('cache-control', 'no-store');
      return reply.type(CONTENT_TYPES['.html']!).send(await readFile(index));
    },
  );
}

const notFound = (path: string) => new AppError('not_found', `No file at ${path}`);

/**
 * The file a URL path names inside `root`: its real path, `undefined` when
 * there is none (a client-side route), `null` when the path tries to leave
 * `root` or cannot be a file name (`..`, NUL, backslashes, bad escapes).
 */
async function locate(root: string, urlPath: string): Promise<string | null | undefined> {
  let path: string;
  try {
    path = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (path.includes('\0') || path.includes('\\')) return null;
  const segments = path.split('/');
  if (segments.some((s) => s === '..' || s === '.')) return null;
  // Hidden files (`.vite/manifest.json`) are build leftovers, not part of the app.
  if (segments.some((s) => s.startsWith('.'))) return undefined;
  const inside = (p: string) => p === root || p.startsWith(root + sep);
  const candidate = join(root, path);
  if (!inside(candidate)) return null;
  try {
    // The real path, so a symbolic link cannot lead out of `root` either.
    const real = await realpath(candidate);
    if (!inside(real)) return null;
    return (await stat(real)).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: string,
  immutable: boolean,
): Promise<FastifyReply> {
  reply
    .header('content-security-policy', DASHBOARD_CSP)
    .header('cache-control', immutable ? IMMUTABLE : 'no-store')
    .type(CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream');
  const gzipped = `${file}.gz`;
  const hasGzip = !file.endsWith('.gz') && (await isFile(gzipped));
  if (hasGzip) {
    reply.header('vary', 'Accept-Encoding');
    if (acceptsGzip(request.headers['accept-encoding'])) {
      return reply.header('content-encoding', 'gzip').send(await readFile(gzipped));
    }
  }
  return reply.send(await readFile(file));
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** `Accept-Encoding` allows gzip: named (or `*`) without `q=0`. */
function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let gzip: boolean | null = null;
  let any = false;
  for (const item of header.split(',')) {
    const [name = '', ...params] = item.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const acceptable = q === undefined || Number(q.slice(2)) > 0;
    if (name === 'gzip' || name === 'x-gzip') gzip = acceptable;
    else if (name === '*') any = acceptable;
  }
  return gzip ?? any;
}
