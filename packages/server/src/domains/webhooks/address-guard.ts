import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { WebhookConfig } from '../../config.js';

/**
 * Where a webhook may be sent. A receiver's URL is checked when it is
 * registered and again before every attempt: the host is resolved, every
 * address it resolves to is checked, and the request connects to the checked
 * address itself (`pinnedLookup`), so a DNS answer that changes between the
 * check and the connection (rebinding) cannot redirect it.
 */

/** Why an address is refused; the first three are allowed with `WEBHOOK_ALLOW_PRIVATE=true`. */
export type AddressClass =
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'shared'
  | 'metadata'
  | 'multicast'
  | 'unspecified'
  | 'reserved';

const ALLOWED_WITH_PRIVATE: ReadonlySet<AddressClass> = new Set([
  'loopback',
  'private',
  'link_local',
  'shared',
]);

const DESCRIBED: Record<AddressClass, string> = {
  loopback: 'a loopback address',
  private: 'a private network address',
  link_local: 'a link-local address',
  shared: 'a carrier-grade NAT (shared) address',
  metadata: 'a cloud metadata service address',
  multicast: 'a multicast or broadcast address',
  unspecified: 'an unspecified address',
  reserved: 'a reserved or documentation address',
};

/** Cloud instance metadata endpoints: never a receiver, whatever the operator allows. */
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254']);

type V4Range = [base: number, bits: number, cls: AddressClass];

const v4 = (dotted: string): number =>
  dotted.split('.').reduce((n, part) => n * 256 + Number(part), 0);

const V4_RANGES: V4Range[] = [
  [v4('0.0.0.0'), 8, 'unspecified'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'shared'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link_local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'],
  [v4('192.0.2.0'), 24, 'reserved'],
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'reserved'],
  [v4('198.51.100.0'), 24, 'reserved'],
  [v4('203.0.113.0'), 24, 'reserved'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'],
];

function classifyV4(address: string): AddressClass | null {
  if (METADATA.has(address)) return 'metadata';
  if (address === '255.255.255.255') return 'multicast';
  const n = v4(address);
  for (const [base, bits, cls] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    if (n >= base && n < base + size) return cls;
  }
  return null;
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted quad converted). */
function v6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const n = v4(quad[1]!);
    text = `${text.slice(0, quad.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

const embeddedV4 = (hi: number, lo: number) => `${hi >>> 8}.${hi & 0xff}.${lo >>> 8}.${lo & 0xff}`;

function classifyV6(address: string): AddressClass | null {
  const g = v6Groups(address);
  const canonical = g.map((x) => x.toString(16)).join(':');
  if (METADATA.has(address.toLowerCase()) || canonical === 'fd00:ec2:0:0:0:0:0:254')
    return 'metadata';
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return 'unspecified';
  if (zeros(0, 7) && g[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d),
  // 6to4 (2002:AABB:CCDD::): judged by the IPv4 address inside.
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return classifyV4(embeddedV4(g[6]!, g[7]!));
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return classifyV4(embeddedV4(g[6]!, g[7]!));
  if (g[0] === 0x2002) return classifyV4(embeddedV4(g[1]!, g[2]!));
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return 'private'; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((first & 0xffc0) === 0xfec0) return 'private'; // fec0::/10, site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if (first === 0x2001 && g[1] === 0xdb8) return 'reserved'; // documentation
  if (first === 0x2001 && g[1] === 0) return 'reserved'; // Teredo: hides an IPv4 address
  if (first === 0x100 && zeros(1, 4)) return 'reserved'; // discard-only
  return null;
}

/** The class of a literal address that a receiver may not have, or null when it is public. */
export function classifyAddress(address: string): AddressClass | null {
  const family = isIP(address);
  if (family === 4) return classifyV4(address);
  if (family === 6) return classifyV6(address);
  return 'reserved';
}

/** A URL or address a webhook may not use, with a reason a person can act on. */
export class WebhookTargetError extends Error {
  constructor(
    readonly issue: string,
    message: string,
    readonly address?: string,
  ) {
    super(message);
    this.name = 'WebhookTargetError';
  }
}

/** Refuses an address the operator has not allowed. */
export function checkAddress(address: string, config: WebhookConfig, host: string): void {
  const cls = classifyAddress(address);
  if (cls === null) return;
  if (config.allowPrivate && ALLOWED_WITH_PRIVATE.has(cls)) return;
  const shown = host === address ? address : `${host} resolves to ${address}`;
  const hint = ALLOWED_WITH_PRIVATE.has(cls)
    ? '; the server operator can allow such receivers with WEBHOOK_ALLOW_PRIVATE=true'
    : '';
  throw new WebhookTargetError(
    `${cls}_address`,
    `Webhooks may not be sent to ${DESCRIBED[cls]} (${shown})${hint}`,
    address,
  );
}

/** At most this long (characters) for a receiver's URL. */
export const MAX_URL_LENGTH = 2048;

/** Parses and checks what can be checked without DNS: scheme, credentials, host. */
export function parseWebhookUrl(raw: string, config: WebhookConfig): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookTargetError('invalid', 'The URL is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new WebhookTargetError('scheme', 'A webhook URL must use https');
  }
  if (url.protocol === 'http:' && !config.allowHttp) {
    throw new WebhookTargetError(
      'https_required',
      'A webhook URL must use https; the server operator can allow http with WEBHOOK_ALLOW_HTTP=true',
    );
  }
  if (url.username || url.password) {
    throw new WebhookTargetError(
      'credentials',
      'A webhook URL may not carry a user name or password; the receiver verifies the signature instead',
    );
  }
  if (url.hash) throw new WebhookTargetError('fragment', 'A webhook URL may not have a #fragment');
  return url;
}

/** The host of a URL as DNS and `isIP` want it (IPv6 literals without brackets). */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Resolves the URL's host and checks every address it resolves to. Returns
 * the address to connect to (the first; all of them passed).
 */
export async function resolveTarget(url: URL, config: WebhookConfig): Promise<ResolvedTarget> {
  const host = hostOf(url);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'error';
      throw new WebhookTargetError('unresolvable', `The host ${host} does not resolve (${code})`);
    }
    if (addresses.length === 0) {
      throw new WebhookTargetError('unresolvable', `The host ${host} does not resolve`);
    }
  }
  for (const { address } of addresses) checkAddress(address, config, host);
  return { host, address: addresses[0]!.address, family: addresses[0]!.family === 6 ? 6 : 4 };
}

export interface ResolvedTarget {
  host: string;
  address: string;
  family: 4 | 6;
}

/**
 * A `lookup` for `http.request` that answers the checked address and nothing
 * else: the connection goes where the check looked.
 */
export function pinnedLookup(target: ResolvedTarget) {
  return (
    _hostname: string,
    options: { all?: boolean },
    callback: (...args: unknown[]) => void,
  ): void => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
