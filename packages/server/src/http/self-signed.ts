import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

/**
 * A self-signed X.509 v3 certificate (RFC 5280) for the embedded default's
 * HTTPS: an ECDSA P-256 key, signed with SHA-256, valid for TLS server
 * authentication to the names and addresses given. Made with Node's own crypto
 * and the DER encoding below: a key in about a millisecond, where an RSA-2048
 * key and a certificate signed in JavaScript took a few hundred; and a server
 * answers each new TLS connection with an ECDSA signature, an order of
 * magnitude cheaper than an RSA one.
 */
export function selfSignedCertificate(subject: {
  commonName: string;
  dnsNames: readonly string[];
  ips: readonly string[];
  days: number;
  now?: Date;
}): { cert: string; key: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const now = subject.now ?? new Date();
  // An hour back, for clients whose clock runs a little behind the server's.
  const notBefore = new Date(now.getTime() - 60 * 60 * 1000);
  const notAfter = new Date(now.getTime() + subject.days * 24 * 60 * 60 * 1000);
  const name = sequence(set(sequence(oid(COMMON_NAME), utf8(subject.commonName))));
  const tbs = sequence(
    explicit(0, integer(Buffer.of(2))), // v3
    integer(serialNumber()),
    sequence(oid(ECDSA_WITH_SHA256)),
    name, // issuer: itself
    sequence(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(
      3,
      sequence(
        extension(BASIC_CONSTRAINTS, true, sequence()), // not a CA
        extension(KEY_USAGE, true, der(0x03, Buffer.of(7, 0x80))), // digitalSignature
        extension(EXTENDED_KEY_USAGE, false, sequence(oid(SERVER_AUTH))),
        extension(
          SUBJECT_ALT_NAME,
          false,
          sequence(
            ...subject.dnsNames.map((dns) => der(0x82, Buffer.from(dns, 'ascii'))),
            ...subject.ips.map((ip) => der(0x87, ipBytes(ip))),
          ),
        ),
      ),
    ),
  );
  const certificate = sequence(
    tbs,
    sequence(oid(ECDSA_WITH_SHA256)),
    bitString(sign('sha256', tbs, privateKey)), // ECDSA-Sig-Value, DER
  );
  return {
    cert: pem('CERTIFICATE', certificate),
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

const COMMON_NAME = '2.5.4.3';
const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const BASIC_CONSTRAINTS = '2.5.29.19';
const KEY_USAGE = '2.5.29.15';
const EXTENDED_KEY_USAGE = '2.5.29.37';
const SUBJECT_ALT_NAME = '2.5.29.17';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';

/** 16 random bytes, positive and without a leading zero byte (RFC 5280 §4.1.2.2). */
function serialNumber(): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  return serial;
}

// DER (X.690) of the few ASN.1 types a certificate needs.

/** One element: its tag, its length (short or long form), its contents. */
function der(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const length: number[] = [];
  for (let n = body.length; n > 0; n = Math.floor(n / 256)) length.unshift(n % 256);
  const header = body.length < 0x80 ? [tag, body.length] : [tag, 0x80 | length.length, ...length];
  return Buffer.concat([Buffer.from(header), body]);
}

const sequence = (...items: Buffer[]) => der(0x30, ...items);
const set = (...items: Buffer[]) => der(0x31, ...items);
const utf8 = (text: string) => der(0x0c, Buffer.from(text, 'utf8'));
const bitString = (bytes: Buffer) => der(0x03, Buffer.of(0), bytes);
const explicit = (n: number, inner: Buffer) => der(0xa0 + n, inner);

/** A non-negative INTEGER from its big-endian bytes (a zero byte ahead of a high bit). */
const integer = (bytes: Buffer) =>
  der(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.of(0), bytes]) : bytes);

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [first! * 40 + second!];
  for (const value of rest) {
    const base128 = [value & 0x7f];
    for (let v = value >>> 7; v > 0; v >>>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return der(0x06, Buffer.from(bytes));
}

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), to the second. */
function time(date: Date): Buffer {
  const digits = date.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return date.getUTCFullYear() < 2050
    ? der(0x17, Buffer.from(`${digits.slice(2)}Z`))
    : der(0x18, Buffer.from(`${digits}Z`));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [der(0x01, Buffer.of(0xff))] : []), der(0x04, value));
}

/** The 4 or 16 bytes of an IPv4 or IPv6 address (an IPv6 one may end in a dotted IPv4). */
function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  if (isIP(ip) !== 6) throw new Error(`not an IP address: ${ip}`);
  let text = ip.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (part: string) => (part ? part.split(':') : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const zeros = Array<string>(8 - left.length - right.length).fill('0');
  const out = Buffer.alloc(16);
  [...left, ...zeros, ...right].forEach((group, i) =>
    out.writeUInt16BE(parseInt(group, 16), i * 2),
  );
  return out;
}

function pem(label: string, bytes: Buffer): string {
  const lines = bytes.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
