import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { send, startServerProcess, type ServerProcess } from '../foundation/server-process.js';

const root = new URL('../../../../', import.meta.url).pathname;
const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `coffer-${name}-`));

/** `node scripts/build.mjs web`, as `npm start` runs it; its output in the error when it fails. */
function buildDashboard(): void {
  try {
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), 'web'], {
      cwd: root,
      stdio: 'pipe',
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`node scripts/build.mjs web failed:\n${stdout}\n${stderr}`);
  }
}

describe('the real dashboard build, served by the real server (process)', () => {
  const dataDir = tempDir('dashboard-build');
  let server: ServerProcess;
  let ca: string;
  before(async () => {
    buildDashboard();
    // No DASHBOARD_DIR: the server finds the web package's build next to its own.
    server = await startServerProcess({ DATA_DIR: dataDir });
    ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints where the dashboard is, next to where it listens', async () => {
    const line = await server.waitFor(/^Coffer dashboard: /);
    assert.equal(line, `Coffer dashboard: ${server.url}/`);
  });

  it("serves index.html whose scripts and styles are all served, and none inline (the CSP allows 'self' only)", async () => {
    const index = await send(`${server.url}/projects/proj_x/secrets`, { ca });
    assert.equal(index.status, 200);
    assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(String(index.headers['content-security-policy']), /script-src 'self'/);
    const html = index.body;

    const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]!);
    assert.ok(scripts.length > 0, 'index.html loads a script');
    for (const attributes of scripts) assert.match(attributes, /\bsrc="/, 'no inline script');
    assert.ok(!/<style\b/.test(html) && !/\sstyle="/.test(html), 'no inline style');

    const sources = scripts.map((a) => /\bsrc="([^"]+)"/.exec(a)![1]!);
    const styles = [...html.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*>/g)].map(
      (m) => /\bhref="([^"]+)"/.exec(m[0])![1]!,
    );
    for (const [paths, type] of [
      [sources, 'text/javascript; charset=utf-8'],
      [styles, 'text/css; charset=utf-8'],
    ] as const) {
      for (const path of paths) {
        assert.match(path, /^\/assets\//, `${path} is a built asset on this origin`);
        const plain = await send(`${server.url}${path}`, { ca });
        assert.equal(plain.status, 200, path);
        assert.equal(plain.headers['content-type'], type, path);
        assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.ok(plain.body.length > 0, path);
        const gzipped = await send(`${server.url}${path}`, {
          ca,
          headers: { 'accept-encoding': 'gzip, br' },
        });
        assert.equal(gzipped.headers['content-encoding'], 'gzip', `${path}: the build wrote a .gz`);
      }
    }
  });

  it('never serves index.html for a script that is not there', async () => {
    const res = await send(`${server.url}/assets/index-00000000.js`, { ca });
    assert.equal(res.status, 404);
    assert.equal((res.json as { error: { code: string } }).error.code, 'not_found');
  });
});

describe('starting without a dashboard (process)', () => {
  it('DASHBOARD=off: nothing printed, nothing warned', async () => {
    const dataDir = tempDir('dashboard-off');
    const server = await startServerProcess({ DATA_DIR: dataDir, DASHBOARD: 'off' });
    try {
      const res = await send(`${server.url}/`, {
        ca: readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8'),
      });
      assert.equal(res.status, 404);
      assert.ok(!server.output().stdout.includes('Coffer dashboard'));
      assert.ok(!server.logs().some((l) => /dashboard/.test(String(l.msg))));
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('DASHBOARD_DIR not built: one warning naming the directory, the API as before', async () => {
    const dataDir = tempDir('dashboard-unbuilt');
    const unbuilt = tempDir('dashboard-unbuilt-dist');
    const server = await startServerProcess({ DATA_DIR: dataDir, DASHBOARD_DIR: unbuilt });
    try {
      const warnings = server.logs().filter((l) => /dashboard not built/.test(String(l.msg)));
      assert.equal(warnings.length, 1, server.output().stdout);
      assert.equal(warnings[0]!.dir, unbuilt);
      assert.ok(!server.output().stdout.includes('Coffer dashboard'));
      const ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
      assert.equal((await send(`${server.url}/`, { ca })).status, 404);
      assert.equal((await send(`${server.url}/healthz`, { ca })).status, 200);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(unbuilt, { recursive: true, force: true });
    }
  });
});
