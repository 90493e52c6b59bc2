import { encodeParts, fromBase64url, toBase64url } from './encoding.js';
import { CryptoError } from './errors.js';
import { publicKeyBytes } from './fingerprint.js';
import { sodium } from './sodium.js';

// A project's membership chain: every fact that decides who may hold the
// project key, signed by an admin's client. The creator's self-signed root
// comes first; each later statement names the hash of the one before it and is
// signed by a user the chain itself has made admin. The server stores the
// chain and can withhold its tail, but cannot add, alter or reorder a statement
// without a signature failing. See CRYPTO.md, "Membership chain".

export type MembershipKind = 'root' | 'add' | 'role' | 'remove';
export type MembershipRole = 'admin' | 'developer' | 'viewer';

export interface MembershipStatement {
  project_id: string;
  /** 0 for the root, then 1, 2, …: the statement's position. */
  seq: number;
  /** base64url BLAKE2b-256 link hash of statement seq − 1; '' for the root. */
  prev: string;
  kind: MembershipKind;
  /** Whom the statement is about (the creator, for the root). */
  user_id: string;
  /** Their X25519 public key, base64url. */
  public_key: string;
  /** Their Ed25519 public key, base64url. */
  signing_public_key: string;
  /** The role from this statement on; null exactly for `remove`. */
  role: MembershipRole | null;
  /** Who signed: the subject for the root, otherwise an admin of the chain. */
  signer_id: string;
  /** ISO timestamp from the signer's clock (informative). */
  at: string;
  /** Ed25519 by the signer over `membershipMessage(statement)`, base64url. */
  signature: string;
}

export type UnsignedStatement = Omit<MembershipStatement, 'signature'>;

/** Whom a statement is about: a user and their public keys (base64url). */
export interface MembershipSubject {
  user_id: string;
  public_key: string;
  signing_public_key: string;
}

export interface ChainMember extends MembershipSubject {
  role: MembershipRole;
}

/** What a valid chain establishes. */
export interface MembershipState {
  project_id: string;
  /** Link hash of the root, base64url: the project's identity. */
  root: string;
  /** The project's fingerprint: the root's link hash as 5 groups of 8 hex digits. */
  fingerprint: string;
  /** Number of statements. */
  length: number;
  /** Link hash of the last statement, base64url. */
  head: string;
  /** Link hash of every statement, by seq (for rollback checks). */
  hashes: string[];
  /** The statements verified, in order (to show them). */
  statements: readonly MembershipStatement[];
  /** Current members by user id. */
  members: Map<string, ChainMember>;
  /**
   * `user_id + ' ' + signing key` of everyone the chain has ever made admin:
   * a grant signed while they were admin stays valid after a later demotion.
   */
  everAdmin: Set<string>;
  /** Every signing key the chain has held for a member, with that member's user id. */
  everSigningKeys: Map<string, string>;
}

export const MAX_CHAIN_LENGTH = 100_000;
const ROLES: readonly string[] = ['admin', 'developer', 'viewer'];
const KINDS: readonly string[] = ['root', 'add', 'role', 'remove'];

const invalid = (why: string) => new CryptoError('invalid_chain', `membership chain: ${why}`);

function checkShape(s: UnsignedStatement, bad: (why: string) => CryptoError): void {
  if (typeof s !== 'object' || s === null) throw bad('a statement is not an object');
  for (const field of ['project_id', 'user_id', 'signer_id', 'at', 'prev'] as const) {
    if (typeof s[field] !== 'string') throw bad(`${field} must be a string`);
  }
  if (s.project_id === '' || s.user_id === '' || s.signer_id === '') throw bad('empty id');
  if (!Number.isSafeInteger(s.seq) || s.seq < 0) throw bad('seq');
  if (!KINDS.includes(s.kind)) throw bad(`kind ${String(s.kind)}`);
  if (s.kind === 'remove' ? s.role !== null : !ROLES.includes(s.role as string)) {
    throw bad(`role ${String(s.role)} for ${s.kind}`);
  }
}

/**
 * What is signed: encodeParts(['coffer/v1/membership', project_id, seq, prev,
 * kind, user_id, x25519 (32 raw bytes), ed25519 (32 raw bytes), role ?? '',
 * signer_id, at]).
 */
export function membershipMessage(statement: UnsignedStatement): Uint8Array {
  checkShape(statement, (why) => new CryptoError('invalid_input', `membership statement: ${why}`));
  return encodeParts([
    'coffer/v1/membership',
    statement.project_id,
    String(statement.seq),
    statement.prev,
    statement.kind,
    statement.user_id,
    publicKeyBytes(statement.public_key),
    publicKeyBytes(statement.signing_public_key),
    statement.role ?? '',
    statement.signer_id,
    statement.at,
  ]);
}

/** Signs a statement with the signer's Ed25519 secret key. */
export function signMembershipStatement(
  statement: UnsignedStatement,
  signingSecretKey: Uint8Array,
): MembershipStatement {
  if (!(signingSecretKey instanceof Uint8Array) || signingSecretKey.length !== 64) {
    throw new CryptoError('invalid_input', 'signing secret key must be 64 bytes');
  }
  const signature = sodium().crypto_sign_detached(membershipMessage(statement), signingSecretKey);
  return {
    project_id: statement.project_id,
    seq: statement.seq,
    prev: statement.prev,
    kind: statement.kind,
    user_id: statement.user_id,
    public_key: statement.public_key,
    signing_public_key: statement.signing_public_key,
    role: statement.role,
    signer_id: statement.signer_id,
    at: statement.at,
    signature: toBase64url(signature),
  };
}

/**
 * The link hash: BLAKE2b-256(encodeParts(['coffer/v1/membership-link',
 * message, signature (64 raw bytes)])), base64url. The next statement's `prev`.
 */
export function membershipLinkHash(statement: MembershipStatement): string {
  const signature = fromBase64url(statement.signature, { code: 'invalid_chain', length: 64 });
  const digest = sodium().crypto_generichash(
    32,
    encodeParts(['coffer/v1/membership-link', membershipMessage(statement), signature]),
    null,
  );
  return toBase64url(digest);
}

/** A project's fingerprint from its root link hash: 20 bytes as 5 groups of 8 uppercase hex digits. */
export function projectFingerprint(root: string): string {
  const hex = sodium()
    .to_hex(fromBase64url(root, { length: 32 }).subarray(0, 20))
    .toUpperCase();
  return (hex.match(/.{8}/g) ?? []).join(' ');
}

const adminKey = (userId: string, signingKey: string) => `${userId} ${signingKey}`;

/**
 * Replays a chain from its root and checks every rule: contiguous `seq`,
 * `prev` links, the root self-signed by an admin subject, every later
 * statement signed by a current admin of the chain with the key the chain
 * holds for them (never a key the server shows), `add` only for non-members,
 * `role`/`remove` only for members and with their chain keys. Throws
 * `invalid_chain` naming the first statement that fails.
 */
export function verifyMembershipChain(
  statements: readonly MembershipStatement[],
  projectId: string,
): MembershipState {
  if (!Array.isArray(statements) || statements.length === 0) throw invalid('it is empty');
  if (statements.length > MAX_CHAIN_LENGTH) throw invalid('too long');
  const lib = sodium();
  const members = new Map<string, ChainMember>();
  const everAdmin = new Set<string>();
  const everSigningKeys = new Map<string, string>();
  const hashes: string[] = [];
  for (const [index, s] of statements.entries()) {
    const at = (why: string) => invalid(`statement ${index}: ${why}`);
    checkShape(s, at);
    if (s.project_id !== projectId) throw at('it belongs to another project');
    if (s.seq !== index) throw at(`seq ${s.seq} is out of place`);
    if (s.prev !== (hashes[index - 1] ?? '')) throw at('it does not link to the statement before');
    let signingKey: string;
    if (s.kind === 'root') {
      if (index !== 0) throw at('a root after the start');
      if (s.signer_id !== s.user_id || s.role !== 'admin')
        throw at('the root must be its signer, as admin');
      signingKey = s.signing_public_key;
    } else {
      if (index === 0) throw at('the chain does not start with a root');
      const signer = members.get(s.signer_id);
      if (!signer || signer.role !== 'admin')
        throw at(`signer ${s.signer_id} is not an admin of the chain`);
      signingKey = signer.signing_public_key;
      const subject = members.get(s.user_id);
      if (s.kind === 'add' && subject) throw at(`${s.user_id} is already a member`);
      if (s.kind !== 'add') {
        if (!subject) throw at(`${s.user_id} is not a member`);
        if (
          subject.public_key !== s.public_key ||
          subject.signing_public_key !== s.signing_public_key
        ) {
          throw at(`the keys of ${s.user_id} differ from the chain's`);
        }
      }
    }
    let signature: Uint8Array;
    try {
      signature = fromBase64url(s.signature, { code: 'invalid_chain', length: 64 });
    } catch {
      throw at('malformed signature');
    }
    let ok: boolean;
    try {
      ok = lib.crypto_sign_verify_detached(
        signature,
        membershipMessage(s),
        publicKeyBytes(signingKey),
      );
    } catch {
      throw at('malformed keys');
    }
    if (!ok) throw at(`the signature of ${s.signer_id} does not verify`);
    if (s.kind === 'remove') members.delete(s.user_id);
    else {
      members.set(s.user_id, {
        user_id: s.user_id,
        public_key: s.public_key,
        signing_public_key: s.signing_public_key,
        role: s.role!,
      });
      if (s.role === 'admin') everAdmin.add(adminKey(s.user_id, s.signing_public_key));
      everSigningKeys.set(s.signing_public_key, s.user_id);
    }
    hashes.push(membershipLinkHash(s));
  }
  const root = hashes[0]!;
  return {
    project_id: projectId,
    root,
    fingerprint: projectFingerprint(root),
    length: statements.length,
    head: hashes[hashes.length - 1]!,
    hashes,
    statements,
    members,
    everAdmin,
    everSigningKeys,
  };
}

/** Whether the chain ever made `userId` admin with `signingPublicKey` (base64url). */
export function wasChainAdmin(
  state: MembershipState,
  userId: string,
  signingPublicKey: string,
): boolean {
  return state.everAdmin.has(adminKey(userId, signingPublicKey));
}

/**
 * The next statement of a chain (`state` null: the root), signed. The caller
 * checks the rules first; `verifyMembershipChain` is the judge.
 */
export function nextMembershipStatement(
  state: MembershipState | null,
  input: {
    projectId: string;
    kind: MembershipKind;
    subject: MembershipSubject;
    role: MembershipRole | null;
    signerId: string;
    signingSecretKey: Uint8Array;
    at: string;
  },
): MembershipStatement {
  return signMembershipStatement(
    {
      project_id: input.projectId,
      seq: state?.length ?? 0,
      prev: state?.head ?? '',
      kind: input.kind,
      user_id: input.subject.user_id,
      public_key: input.subject.public_key,
      signing_public_key: input.subject.signing_public_key,
      role: input.role,
      signer_id: input.signerId,
      at: input.at,
    },
    input.signingSecretKey,
  );
}
