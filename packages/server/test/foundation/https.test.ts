import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { send, startServerProcess, type ServerProcess } from './server-process.js';

const SECURITY_HEADERS: Record<string, RegExp> = {
  'strict-transport-security': /^max-age=\d{7,}; includeSubDomains$/,
  'x-content-type-options': /^nosniff$/,
  'x-frame-options': /^DENY$/,
  'referrer-policy': /^no-referrer$/,
  'content-security-policy': /default-src 'none'/,
  'cache-control': /^no-store$/,
};

const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `coffer-${name}-`));

describe('HTTPS with a generated certificate (real process)', () => {
  const dataDir = tempDir('https');
  let server: ServerProcess;
  let ca: string;
  before(async () => {
    server = await startServerProcess({ DATA_DIR: dataDir });
    ca = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates a certificate into $DATA_DIR/tls on first start and prints its SHA-256 fingerprint', () => {
    const fingerprint = new X509Certificate(ca).fingerprint256;
    assert.match(fingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.ok(existsSync(join(dataDir, 'tls/key.pem')));
    assert.ok(
      server.output().stdout.includes(`SHA-256 fingerprint: ${fingerprint}`),
      server.output().stdout,
    );
    assert.match(server.url, /^https:\/\/localhost:\d+$/);
  });

  it('the certificate: ECDSA P-256, self-signed, for TLS servers, naming localhost, 127.0.0.1 and ::1', () => {
    const cert = new X509Certificate(ca);
    assert.equal(cert.publicKey.asymmetricKeyType, 'ec');
    assert.equal(cert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.ok(cert.verify(cert.publicKey), 'signed by its own key');
    assert.equal(cert.issuer, cert.subject);
    assert.equal(cert.ca, false);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'serverAuth');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkIP('::1'), '::1');
    assert.equal(cert.checkHost('example.com'), undefined);
    const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
    assert.ok(days > 824 && days <= 825, `valid for ${days} more days`);
    assert.ok(Date.parse(cert.validFrom) <= Date.now(), 'already valid');
    // The private key is the certificate's, and only its owner reads it.
    assert.ok(
      createPublicKey(readFileSync(join(dataDir, 'tls/key.pem'), 'utf8')).equals(cert.publicKey),
    );
    assert.equal(statSync(join(dataDir, 'tls/key.pem')).mode & 0o777, 0o600);
  });

  it('serves the API over TLS that verifies against that certificate, for localhost and 127.0.0.1', async () => {
    for (const host of ['localhost', '127.0.0.1']) {
      const url = server.url.replace('localhost', host);
      const res = await send(`${url}/healthz`, { ca });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, { data: { status: 'ok' } });
      assert.equal(res.peerFingerprint, new X509Certificate(ca).fingerprint256);
    }
    // Without trusting it, a client refuses the connection.
    await assert.rejects(send(`${server.url}/healthz`), /self[- ]signed|unable to verify/i);
  });

  it('HTTPS responses carry HSTS and the security headers', async () => {
    for (const path of ['/healthz', '/v1/projects', '/v1/nowhere']) {
      const res = await send(`${server.url}${path}`, { ca });
      for (const [name, pattern] of Object.entries(SECURITY_HEADERS)) {
        assert.match(String(res.headers[name]), pattern, `${name} on ${path}`);
      }
    }
  });

  it('the plain-HTTP listener answers every method with 308 to the same path and query on HTTPS', async () => {
    assert.ok(server.redirectUrl, 'a redirect listener is running');
    const httpsPort = new URL(server.url).port;
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']) {
      const res = await send(`${server.redirectUrl}/v1/projects/proj_1?page=2&sort=name`, {
        method,
        ...(method === 'POST' || method === 'PUT' ? { body: { name: 'x' } } : {}),
      });
      assert.equal(res.status, 308, method);
      assert.equal(
        res.headers.location,
        `https://localhost:${httpsPort}/v1/projects/proj_1?page=2&sort=name`,
        method,
      );
    }
  });

  it('a POST that follows the 308 keeps its method and body', async () => {
    const body = { email: 'someone@example.test' };
    const redirected = await send(`${server.redirectUrl}/v1/auth/prelogin`, {
      method: 'POST',
      body,
    });
    assert.equal(redirected.status, 308);
    const followed = await send(String(redirected.headers.location), {
      method: 'POST',
      body,
      ca,
    });
    assert.equal(followed.status, 200, followed.body);
    assert.ok((followed.json as { data: { kdf_params: unknown } }).data.kdf_params);
  });

  it('bytes that are not HTTP, or oversized headers, still get a Form A error body', async () => {
    const { port } = new URL(server.url);
    const raw = (payload: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(
          { host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' },
          () => socket.write(payload),
        );
        let answer = '';
        socket.on('data', (c: Buffer) => (answer += c.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', (err) => (answer ? resolve(answer) : reject(err)));
      });
    const garbage = await raw('HELLO THERE\r\n\r\n');
    assert.match(garbage, /^HTTP\/1\.1 400 /);
    assert.match(
      garbage,
      /\{"error":\{"code":"validation_error","message":"[^"]+","request_id":"req_[\w-]+"\}\}$/,
    );
    const huge = await raw(
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.match(huge, /^HTTP\/1\.1 431 /);
    assert.match(huge, /"code":"validation_error"/);
  });

  it('reuses the certificate on the next start', async () => {
    const before = readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8');
    await server.stop();
    server = await startServerProcess({ DATA_DIR: dataDir });
    assert.equal(readFileSync(join(dataDir, 'tls/cert.pem'), 'utf8'), before);
    const fingerprint = new X509Certificate(before).fingerprint256;
    assert.ok(server.output().stdout.includes(fingerprint));
    assert.ok(!server.logs().some((l) => l.msg === 'generated a self-signed TLS certificate'));
    const res = await send(`${server.url}/healthz`, { ca: before });
    assert.equal(res.peerFingerprint, fingerprint);
  });
});

describe('HTTPS with configured certificate files (real process)', () => {
  const dataDir = tempDir('tls-files');
  let server: ServerProcess;
  let cert: string;
  before(async () => {
    // An operator's certificate as tools make them: RSA, by OpenSSL.
    const keyFile = join(dataDir, 'operator-key.pem');
    const certFile = join(dataDir, 'operator-cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(certFile, 'utf8');
    assert.equal(new X509Certificate(cert).publicKey.asymmetricKeyType, 'rsa');
    server = await startServerProcess({
      DATA_DIR: join(dataDir, 'data'),
      TLS_CERT_FILE: join(dataDir, 'operator-cert.pem'),
      TLS_KEY_FILE: join(dataDir, 'operator-key.pem'),
      HTTP_PORT: 'off',
    });
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the configured certificate and generates none', async () => {
    const res = await send(`${server.url}/healthz`, { ca: cert });
    assert.equal(res.status, 200);
    assert.equal(res.peerFingerprint, new X509Certificate(cert).fingerprint256);
    assert.ok(!existsSync(join(dataDir, 'data/tls')));
    assert.equal(server.redirectUrl, null, 'HTTP_PORT=off: no plain listener');
  });
});

describe('behind a TLS-terminating proxy: TLS=off, TRUST_PROXY=true (real process)', () => {
  const dataDir = tempDir('proxy');
  let server: ServerProcess;
  before(async () => {
    server = await startServerProcess({ DATA_DIR: dataDir, TLS: 'off', TRUST_PROXY: 'true' });
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('redirects X-Forwarded-Proto: http with 308 to HTTPS, for GET and POST', async () => {
    assert.match(server.url, /^http:\/\//);
    for (const method of ['GET', 'POST']) {
      const res = await send(`${server.url}/v1/auth/prelogin?from=proxy`, {
        method,
        headers: { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'coffer.example.com' },
        ...(method === 'POST' ? { body: { email: 'a@example.test' } } : {}),
      });
      assert.equal(res.status, 308, method);
      assert.equal(res.headers.location, 'https://coffer.example.com/v1/auth/prelogin?from=proxy');
    }
  });

  it('serves requests the proxy received over HTTPS, with HSTS', async () => {
    const res = await send(`${server.url}/v1/auth/prelogin`, {
      method: 'POST',
      headers: { 'x-forwarded-proto': 'https' },
      body: { email: 'a@example.test' },
    });
    assert.equal(res.status, 200, res.body);
    assert.match(String(res.headers['strict-transport-security']), /max-age=/);
  });
});
