import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { selfSignedCertificate } from './self-signed.js';

interface TlsMaterial {
  key: string;
  cert: string;
  /** SHA-256 fingerprint of the certificate, `AA:BB:…`, for users to compare. */
  fingerprint: string;
  /** Set when the certificate was generated on this start. */
  generated: boolean;
  certFile: string;
}

/**
 * The certificate and key from the configured files, or a self-signed pair kept
 * in the data directory (generated on first start, reused afterwards), so the
 * embedded default serves HTTPS without any setup.
 */
export async function loadTls(config: Config): Promise<TlsMaterial | null> {
  if (config.tls.mode === 'off') return null;
  if (config.tls.mode === 'files') {
    const cert = readFileSync(config.tls.certFile, 'utf8');
    const key = readFileSync(config.tls.keyFile, 'utf8');
    return {
      key,
      cert,
      fingerprint: fingerprintOf(cert),
      generated: false,
      certFile: config.tls.certFile,
    };
  }
  const dir = join(config.dataDir, 'tls');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) {
    const cert = readFileSync(certFile, 'utf8');
    return {
      key: readFileSync(keyFile, 'utf8'),
      cert,
      fingerprint: fingerprintOf(cert),
      generated: false,
      certFile,
    };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const publicHost = new URL(config.publicUrl).hostname.replace(/^\[(.*)\]$/, '$1');
  const names = new Set(['localhost', ...(isIP(publicHost) ? [] : [publicHost])]);
  const ips = new Set(['127.0.0.1', '::1', ...(isIP(publicHost) ? [publicHost] : [])]);
  const pems = selfSignedCertificate({
    commonName: publicHost,
    dnsNames: [...names],
    ips: [...ips],
    days: 825,
  });
  writeFileSync(keyFile, pems.key, { mode: 0o600 });
  writeFileSync(certFile, pems.cert, { mode: 0o644 });
  return {
    key: pems.key,
    cert: pems.cert,
    fingerprint: fingerprintOf(pems.cert),
    generated: true,
    certFile,
  };
}

function fingerprintOf(certPem: string): string {
  return new X509Certificate(certPem).fingerprint256;
}

/**
 * The plain-HTTP listener: every method, every path answers `308` to the same
 * path and query on HTTPS (308 keeps the method and body, unlike 301/302).
 */
export function createRedirectServer(config: Config): Server {
  const httpsPort = config.port;
  return createServer((req, res) => {
    const hostHeader = req.headers.host ?? new URL(config.publicUrl).host;
    const hostname = hostHeader.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '[$1]');
    const publicUrl = new URL(config.publicUrl);
    // `PORT=0` (any free port): the derived public URL names port 0; use the real one.
    if (publicUrl.port === '0') publicUrl.port = String(httpsPort);
    const target =
      hostname === publicUrl.hostname
        ? `${publicUrl.origin}${req.url ?? '/'}`
        : `https://${hostname}${httpsPort === 443 ? '' : `:${httpsPort}`}${req.url ?? '/'}`;
    const body = JSON.stringify({
      error: { code: 'https_required', message: `Coffer is served over HTTPS: ${target}` },
    });
    res.writeHead(308, {
      location: target,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
    req.resume();
  });
}
