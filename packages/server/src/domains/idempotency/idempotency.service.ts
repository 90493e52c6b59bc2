import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hash as digest,
  randomBytes,
} from 'node:crypto';
import { deserialize, serialize } from 'node:v8';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { AppError } from '../../errors.js';
import type { SharedDeps } from '../../shared-deps.js';
import { driverErrorKind } from '../../db/driver-errors.js';
import type { Database, IdempotencyKeyTable } from '../../db/schema.js';
import {
  bodyStrings,
  fromClearJson,
  liftBodyStrings,
  fromShaped,
  requestStrings,
  restoreBodyStrings,
  shapeNamed,
  SHAPED_MARK,
  toClearJson,
  toShaped,
  type BodyRef,
  type ResultShape,
} from './body-strings.js';
import {
  CommittedEarlier,
  KeyTaken,
  type KeyRecords,
  type WriteClaim,
} from '../../db/write-claims.js';
import {
  committedKeyStatement,
  deleteExpiredKey,
  deleteExpiredKeys,
  findLiveKey,
  insertCommittedKey,
  insertCommittedKeys,
  groupKeyRows,
  lookupBytes,
  sweepExpiredKeys,
  type StoredKey,
} from './idempotency.repo.js';

/** How long a repeat waits for an earlier request with its key on this instance before `409`. */
const WAIT_FOR_EARLIER_MS = 5_000;
const PURGE_INTERVAL_MS = 10 * 60 * 1000;
const PURGE_BATCH = 500;

/** An unsafe request carrying `Idempotency-Key`. */
export interface KeyedRequest {
  /** Whose key it is: `user:<id>`, `api_key:<id>`, `ci_token:<id>`. */
  owner: string;
  key: string;
  method: string;
  url: string;
  /** The parsed body. */
  body: unknown;
  /** A JSON body's bytes as they arrived, when it had one. */
  bodyBytes?: Uint8Array | null;
}

/** How a route's keyed requests are claimed (its `idempotency…` config, http/idempotency.ts). */
export interface ClaimOptions {
  /** The key is checked when the write commits, not read before the handler. */
  atCommit?: boolean;
  /** The result is stored unsealed: it holds nothing the database does not hold in clear. */
  resultInClear?: boolean;
  /** With `resultInClear`: how the result is laid out, to store it by position (`ResultShape`). */
  resultShape?: ResultShape;
}

const sha256 = (...parts: string[]) => digest('sha256', parts.join('\u0000'), 'hex');

/**
 * What a key's row keeps of its request (migration 017): the first 16 bytes
 * of SHA-256 over the method, the URL and `payload`. The payload is the
 * body's bytes as they arrived: a repeat is the same request byte for byte,
 * as a client that resends what it sent gives it. One call to the one-shot
 * hash over the bytes put together: a `Hash` object (a stream, and a native
 * object the collector must finalize) for each keyed write cost more.
 */
function fingerprintOf({ method, url }: KeyedRequest, payload: Uint8Array | string): Buffer {
  const head = `${method}\u0000${url}\u0000`;
  const bytes =
    typeof payload === 'string' ? head + payload : Buffer.concat([Buffer.from(head), payload]);
  return digest('sha256', bytes, 'buffer').subarray(0, 16);
}

/**
 * The parsed body serialized again: the payload of a body that was not sent
 * as bytes (none in practice: JSON is the only body type, http/json-body.ts),
 * and of every fingerprint stored before 2026-11-28.
 */
const reserialized = (request: KeyedRequest) => JSON.stringify(request.body ?? null);

/**
 * Whether a stored fingerprint is that of `request`, whose own is
 * `fingerprint`. Rows stored before fingerprints covered the body's bytes
 * (2026-11-28) hold the fingerprint of the body `reserialized`: a repeat sent
 * across that upgrade, within its key's 24 hours, still matches its row. The
 * check also lets through a repeat whose body is the same JSON written
 * otherwise when the first attempt's was compact, which is the same request.
 */
function sameRequest(stored: Uint8Array, fingerprint: Buffer, request: KeyedRequest): boolean {
  if (fingerprint.equals(stored)) return true;
  return request.bodyBytes != null && fingerprintOf(request, reserialized(request)).equals(stored);
}

/**
 * A key that starts with the time it was made: 12 hex digits of Unix
 * milliseconds and a dot, as the SDK generates them (`newIdempotencyKey`).
 */
const TIMED_KEY = /^[0-9a-f]{12}\./;

/**
 * Where a key's row is found: SHA-256 of credential and key, after the key's
 * time when it starts with one. Rows of keys made in time order then go to
 * the end of the key index (SQLite: one page per group commit instead of one
 * per write); the time is no secret, the row holds its own `created_at`.
 */
export function keyLookup(owner: string, key: string): string {
  const hashed = sha256('key', owner, key);
  return TIMED_KEY.test(key) ? key.slice(0, 12) + hashed : hashed;
}

/** CSPRNG bytes for the results' nonces, drawn 4 KiB at a time (a few hundred seals per draw). */
let noncePool = Buffer.alloc(0);
function nonce(): Buffer {
  if (noncePool.length < 12) noncePool = randomBytes(4096);
  const iv = noncePool.subarray(0, 12);
  noncePool = noncePool.subarray(12);
  return iv;
}

/**
 * The first byte of a sealed result's plaintext: the result without the long
 * strings of its request's body, then where they go (`body-strings.ts`).
 * Results sealed before had none: a v8 serialization, whose first byte is 0xff.
 */
const LIFTED_FORMAT = 0x01;
const FORMAT_BYTE = Buffer.of(LIFTED_FORMAT);
/**
 * What a result stored in clear starts with: JSON with the strings the
 * request knows marked (`toClearJson`). Before that format, results in clear
 * were a dot and the base64 of the lifted serialization unsealed; a result
 * JSON cannot hold exactly is still stored so.
 */
const JSON_PREFIX = '~';
const CLEAR_PREFIX = '.';
/**
 * What a result stored by position starts with (after `JSON_PREFIX`): `@`,
 * the shape's name, then the JSON array of its leaves' values, the request's
 * strings marked with `SHAPED_MARK` (`toShaped`). JSON never starts with `@`.
 */
const SHAPED_PREFIX = '~@';

/**
 * How a write's transaction result is stored under its key, and read back.
 * Sealed (the default): encrypted with AES-256-GCM under a key derived from
 * the client's idempotency key, the lookup hash as associated data, so the
 * server keeps neither the key nor anything it could decrypt with: for a new
 * API key, the result holds its bearer part. In clear (`inClear`), for routes
 * whose result, once the strings of the request are taken out, holds only
 * what the database already holds in clear (a secret's id, version and
 * comment): JSON, no key derivation, cipher or base64, and a row about half
 * the size (docs/performance.md). Either way the strings of the request the
 * result repeats (a secret write's ciphertext; in clear also its name, its
 * environment's id and its time) are not stored, but taken from the repeat,
 * the same by its fingerprint; `at` is the first attempt's instant, as the
 * key's row keeps it. Opening reads every format, whatever `inClear`. One
 * per keyed request, so a class: its methods are shared, not closures made
 * again for every request.
 */
class ResultCodec {
  /**
   * Both keys, from one HMAC-SHA-512 keyed by the client's key (HKDF's
   * extract step alone: the key is random), derived when first needed.
   */
  private keys: Buffer | null = null;
  private readonly inClear: boolean;
  private readonly shape: ResultShape | undefined;

  constructor(
    private readonly request: KeyedRequest,
    private readonly lookup: string,
    options: { inClear: boolean; shape: ResultShape | undefined },
  ) {
    this.inClear = options.inClear;
    this.shape = options.shape;
  }

  private derived(): Buffer {
    const { key, owner } = this.request;
    return (this.keys ??= createHmac('sha512', key)
      .update(`coffer idempotency\u0000${owner}`)
      .digest());
  }

  private sealKey(): Buffer {
    return this.derived().subarray(0, 32);
  }

  private restore(lifted: Buffer): { value: unknown } {
    const [value, refs] = deserialize(lifted) as [unknown, BodyRef[]];
    return { value: restoreBodyStrings(value, refs, bodyStrings(this.request.body)) };
  }

  /** The n-th id of `kind` of a request under this key: the same on every attempt. */
  idBytes(kind: string, n: number): Buffer {
    return createHmac('sha512', this.derived().subarray(32)).update(`${kind}:${n}`).digest();
  }

  seal(value: unknown, at: string): string | null {
    const { body, url } = this.request;
    const { shape } = this;
    if (this.inClear) {
      const strings = requestStrings(body, url, at);
      const values = shape && toShaped(value, shape);
      const shaped = values && toClearJson(values, strings, SHAPED_MARK);
      if (shaped) return `${SHAPED_PREFIX}${shape!.name}${shaped}`;
      const json = toClearJson(value, strings);
      if (json !== null) return JSON_PREFIX + json;
    }
    let plain: Buffer;
    try {
      const lifted = liftBodyStrings(value, bodyStrings(body));
      plain = serialize([lifted.value, lifted.refs]);
    } catch {
      return null; // not cloneable: the write commits, a repeat cannot replay it
    }
    if (this.inClear) return CLEAR_PREFIX + plain.toString('base64');
    const iv = nonce();
    const cipher = createCipheriv('aes-256-gcm', this.sealKey(), iv).setAAD(
      Buffer.from(this.lookup),
    );
    // In order: the tag exists once the cipher is final.
    const parts = [iv, cipher.update(FORMAT_BYTE), cipher.update(plain), cipher.final()];
    return Buffer.concat([...parts, cipher.getAuthTag()]).toString('base64');
  }

  open(text: string | null, at: string): { value: unknown } {
    if (text === null) throw replayLost();
    const { body, url } = this.request;
    if (text.startsWith(SHAPED_PREFIX)) {
      const start = text.indexOf('[');
      const named = shapeNamed(text.slice(SHAPED_PREFIX.length, start));
      if (start < 0 || !named) throw replayLost();
      const values = fromClearJson(text.slice(start), requestStrings(body, url, at), SHAPED_MARK);
      return { value: fromShaped(values, named) };
    }
    if (text.startsWith(JSON_PREFIX))
      return { value: fromClearJson(text.slice(1), requestStrings(body, url, at)) };
    if (text.startsWith(CLEAR_PREFIX)) return this.restore(Buffer.from(text.slice(1), 'base64'));
    const bytes = Buffer.from(text, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.sealKey(), bytes.subarray(0, 12))
      .setAAD(Buffer.from(this.lookup))
      .setAuthTag(bytes.subarray(bytes.length - 16));
    const plain = Buffer.concat([decipher.update(bytes.subarray(12, -16)), decipher.final()]);
    if (plain[0] !== LIFTED_FORMAT) return { value: deserialize(plain) };
    return this.restore(plain.subarray(1));
  }
}

/** A repeat of a write that committed, whose result this server cannot give again. */
const replayLost = () =>
  new AppError(
    'request_in_progress',
    'A request with this Idempotency-Key was executed, but its result cannot be given again; read the resource instead',
  );

/** The SQLite group commit's statements for the keys of its writes (`KeyRecords`). */
const keyRecords: KeyRecords = { find: groupKeyRows, insert: insertCommittedKeys };

const reused = () =>
  new AppError(
    'idempotency_key_reused',
    'This Idempotency-Key was used for a different request (another method, URL or body); use a new key',
    [{ field: 'Idempotency-Key', issue: 'reused' }],
  );

/** Resolves whether `promise` settled within `ms`. */
const settlesWithin = (promise: Promise<unknown>, ms: number) =>
  new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void promise.finally(() => (clearTimeout(timer), resolve(true)));
  });

const inProgress = () =>
  new AppError(
    'request_in_progress',
    'A request with this Idempotency-Key is being handled elsewhere; retry in a moment',
  );

/** A request's claim, and what to call once the request is answered. */
export interface Claimed {
  claim: WriteClaim;
  done: () => void;
}

/**
 * A keyed request's claim on its write (`WriteClaim`, db/write-claims.ts).
 * One per keyed request, so a class: its methods are shared, not closures
 * made again for every request. It reaches the request's key and body, never
 * its reply: the write's queue holds the claim, and what the claim reaches
 * lives as long as anything that once held it (ARCHITECTURE.md, "Idempotency
 * keys").
 */
class KeyClaim implements WriteClaim {
  settled = false;
  writing = false;
  active = true;
  replayed = false;
  readonly records = keyRecords;
  readonly committed: { value: unknown } | null;
  /** How many ids of each kind the request has drawn (`idBytes`). */
  private ids: Map<string, number> | null = null;
  private readonly codec: ResultCodec;
  private readonly createdAt: string;
  readonly lookupBytes: Buffer;
  /** The key is checked at the write's commit (`ClaimOptions.atCommit`). */
  private readonly atCommit: boolean;

  constructor(
    readonly lookup: string,
    private readonly fingerprint: Buffer,
    /** The instant the request is handled at: the first attempt's, for a repeat. */
    readonly at: Date,
    private readonly request: KeyedRequest,
    options: ClaimOptions,
    stored: StoredKey | undefined,
    private readonly deps: Pick<SharedDeps, 'db' | 'clock'>,
  ) {
    this.createdAt = at.toISOString();
    this.lookupBytes = lookupBytes(lookup);
    this.codec = new ResultCodec(request, lookup, {
      inClear: options.resultInClear === true,
      shape: options.resultShape,
    });
    this.atCommit = options.atCommit === true;
    this.committed = stored ? this.codec.open(stored.result, stored.created_at) : null;
  }

  idBytes(kind: string): Buffer {
    this.ids ??= new Map();
    const n = this.ids.get(kind) ?? 0;
    this.ids.set(kind, n + 1);
    return this.codec.idBytes(kind, n);
  }

  recordRow(value: unknown): IdempotencyKeyTable {
    return {
      lookup: this.lookupBytes,
      fingerprint: this.fingerprint,
      result: this.codec.seal(value, this.createdAt),
      created_at: this.createdAt,
    };
  }

  async record(trx: Kysely<Database>, value: unknown): Promise<void> {
    const now = this.deps.clock.now().toISOString();
    // False: another request with this key (on another instance) committed first.
    if (!(await insertCommittedKey(trx, this.recordRow(value), now))) throw inProgress();
  }

  recordStatement(value: unknown): string {
    return committedKeyStatement(this.recordRow(value));
  }

  async explain(error: unknown): Promise<unknown> {
    // Checked at commit, any failure may be a repeat's (its write refused on
    // the state the first one left, or its key's insert).
    const taken = error instanceof KeyTaken;
    const unique = driverErrorKind(error) === 'unique_violation';
    const { atCommit } = this;
    if (!atCommit && !taken && !unique) return error;
    const { db, clock } = this.deps;
    const now = clock.now().toISOString();
    const other = await findLiveKey(db.kysely, this.lookup, now).catch(() => undefined);
    if (!other) {
      // PostgreSQL's insert sent with the commit (`committedKeyStatement`)
      // also fails on a row that had only expired: removed, the write,
      // retried as a lost race, records the key anew.
      if (unique) await deleteExpiredKey(db.kysely, this.lookup, now).catch(() => undefined);
      return taken ? inProgress() : error;
    }
    if (!sameRequest(other.fingerprint, this.fingerprint, this.request)) return reused();
    return atCommit
      ? new CommittedEarlier(this.codec.open(other.result, other.created_at).value)
      : inProgress();
  }
}

/**
 * A keyed request being handled by this instance, as `handling` in
 * `idempotencyService` keeps it: what a repeat arriving meanwhile waits for.
 * It reaches nothing of the request, its claim or its reply: `handling`
 * lives as long as the server, and while an entry there reached the claim,
 * V8 promoted several KB more of each keyed request's objects to its old
 * generation (docs/performance.md, "Keyed writes and the young generation").
 * The promise is made only when a repeat waits.
 */
class InFlight {
  private over = false;
  private ended: Promise<void> | null = null;
  private wake: (() => void) | null = null;

  constructor(
    private readonly lookup: string,
    private readonly handling: Map<string, InFlight>,
  ) {
    handling.set(lookup, this);
  }

  /** The request is answered (or its connection gone, or its claim refused); again does nothing. */
  end(): void {
    if (this.over) return;
    this.over = true;
    this.wake?.();
    if (this.handling.get(this.lookup) === this) this.handling.delete(this.lookup);
  }

  /** `end`, then `err` thrown on: for a claim that could not be taken. */
  fail(err: unknown): never {
    this.end();
    throw err;
  }

  /** Resolves once `end` is called. */
  finished(): Promise<void> {
    if (this.over) return Promise.resolve();
    return (this.ended ??= new Promise<void>((resolve) => (this.wake = resolve)));
  }
}

/**
 * Idempotency keys (ARCHITECTURE.md, "Idempotency keys"): the claim a keyed
 * request's write commits under, and the purge of expired keys.
 */
export function idempotencyService(deps: Pick<SharedDeps, 'db' | 'clock'>) {
  const { db, clock } = deps;
  // Requests with a key being handled by this instance, by lookup: a repeat
  // waits for the earlier one instead of racing it.
  const handling = new Map<string, InFlight>();

  /** Takes `request`'s claim, this instance's other requests with its key done. */
  function take(
    lookup: string,
    fingerprint: Buffer,
    request: KeyedRequest,
    options: ClaimOptions,
  ): Claimed | Promise<Claimed> {
    const flight = new InFlight(lookup, handling);
    const make = (stored: StoredKey | undefined): Claimed => {
      if (stored && !sameRequest(stored.fingerprint, fingerprint, request)) throw reused();
      const at = stored ? new Date(stored.created_at) : clock.now();
      const claim = new KeyClaim(lookup, fingerprint, at, request, options, stored, deps);
      // Called once the request is answered (or its connection gone); again does nothing.
      const done = () => {
        claim.active = false;
        flight.end();
      };
      return { claim, done };
    };
    // The route's write is all in one environment write (nothing before it
    // depends on the claim's time or ids): the key is not read first, on
    // either dialect, and the claim is taken at once. A repeat meets the
    // key's live row where the write records keys (PostgreSQL: a unique
    // violation at commit, which rolls the write back; the SQLite group
    // commit: before it runs the write, `KeyTaken`) and is answered with
    // the stored result (`explain`).
    if (options.atCommit) {
      try {
        return make(undefined);
      } catch (err) {
        return flight.fail(err);
      }
    }
    return findLiveKey(db.kysely, lookup, clock.now().toISOString()).then(make, (err: unknown) =>
      flight.fail(err),
    );
  }

  return {
    /**
     * The claim `request`'s write runs under. A repeat of a write that
     * committed gets that write's result back in place of running it again,
     * and its claim's `replayed` is set. `done` must be called once the
     * request is answered. Taken at once (no promise) when nothing is to be
     * read or waited for: a route that checks its key at commit, with no
     * other request of the key on this instance.
     */
    claim(request: KeyedRequest, options: ClaimOptions = {}): Claimed | Promise<Claimed> {
      const lookup = keyLookup(request.owner, request.key);
      const fingerprint = fingerprintOf(request, request.bodyBytes ?? reserialized(request));
      const earlier = handling.get(lookup);
      if (!earlier) return take(lookup, fingerprint, request, options);
      return settlesWithin(earlier.finished(), WAIT_FOR_EARLIER_MS).then((settled) => {
        if (!settled) throw inProgress();
        return take(lookup, fingerprint, request, options);
      });
    },

    /**
     * Deletes expired keys, `batch` at a time; how many. PostgreSQL finds
     * them by their index; SQLite, whose table has none, walks it in key
     * order, yielding to requests between stretches.
     */
    async purgeExpired(batch = PURGE_BATCH): Promise<number> {
      const now = clock.now().toISOString();
      let purged = 0;
      if (db.dialect === 'sqlite') {
        for (let after: Uint8Array = Buffer.alloc(0); ;) {
          const stretch = await sweepExpiredKeys(db.kysely, after, now, batch);
          purged += stretch.purged;
          if (stretch.last === null) return purged;
          after = stretch.last;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      for (;;) {
        const n = await deleteExpiredKeys(db.kysely, now, batch);
        purged += n;
        if (n < batch) return purged;
      }
    },
  };
}

export type IdempotencyService = ReturnType<typeof idempotencyService>;

/** The periodic purge of expired keys: one per app, started when it is ready. */
export function idempotencyPurge(
  service: Pick<IdempotencyService, 'purgeExpired'>,
  log: Pick<FastifyBaseLogger, 'error'>,
): { start(): void; stop(): void } {
  let timer: NodeJS.Timeout | null = null;
  return {
    start() {
      timer = setInterval(() => {
        service
          .purgeExpired()
          .catch((err: unknown) => log.error({ err }, 'purging expired idempotency keys failed'));
      }, PURGE_INTERVAL_MS);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
