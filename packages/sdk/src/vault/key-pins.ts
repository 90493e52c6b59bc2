import {
  fingerprint,
  ready,
  signKeyPins,
  toBase64url,
  verifyKeyPins,
  type KeyPin,
  type KeyPinStatus,
  type KeyPinsDocument,
  type MembershipState,
  type ProjectPin,
} from '../crypto/index.js';
import { CofferApiError } from '../client/errors.js';
import type { CofferClient } from '../client/http.js';
import { getKeyPins, putKeyPins } from '../client/key-trust.js';
import { VaultError } from './errors.js';
import type { VaultKeys } from './keys.js';

/** A user's keys as the server shows them. */
export interface PinnableUser {
  user_id: string;
  email: string;
  public_key: string;
  signing_public_key: string;
}

export interface KeyPinsOptions {
  /**
   * The highest version this client has seen (the CLI keeps it in its session
   * file, the dashboard may keep it in local storage): a lower one from the
   * server is a rollback (`pins_rollback`).
   */
  minVersion?: number;
  /** Called with each version loaded or saved, to remember the highest. */
  onVersion?: (version: number) => void;
  /** For tests. */
  now?: () => Date;
}

const normalizeFingerprint = (f: string) => f.replace(/\s+/g, '').toUpperCase();

/**
 * The keys the signed-in user has accepted for the users they deal with: trust
 * on first use (`tofu`), or `verified` after a fingerprint comparison or a
 * verified introduction. Stored on the server as a document signed by the
 * user's own Ed25519 key (GET/PUT /v1/me/key-pins), so it travels with the
 * account; the server cannot alter it, and a rollback below `minVersion` is
 * refused. Pass an instance as `pins` to `openVault`, `grantMember`, `rekey`
 * and `acceptWithIntroduction`: each refuses (`key_changed`, naming the user)
 * when the server shows a key other than the pinned one, pins new users, and
 * saves. Without `pins` those functions behave as before.
 */
export class KeyPins {
  private pins = new Map<string, KeyPin>();
  private changes = new Map<string, KeyPin>();
  private projects = new Map<string, ProjectPin>();
  private projectChanges = new Map<string, ProjectPin>();
  private currentVersion = 0;

  private constructor(
    private readonly client: CofferClient,
    private readonly ownerId: string,
    private readonly keys: VaultKeys,
    private readonly options: KeyPinsOptions,
  ) {}

  /** Fetches and verifies the user's pins (`pins_rollback` below `minVersion`). */
  static async load(
    client: CofferClient,
    owner: { userId: string; keys: VaultKeys },
    options: KeyPinsOptions = {},
  ): Promise<KeyPins> {
    await ready();
    const pins = new KeyPins(client, owner.userId, owner.keys, options);
    await pins.reload();
    return pins;
  }

  /** The version of the document these pins were loaded from or last saved as (0: none yet). */
  get version(): number {
    return this.currentVersion;
  }

  /** Every pin, sorted by user id. */
  list(): KeyPin[] {
    return [...this.pins.values()].sort((a, b) => (a.user_id < b.user_id ? -1 : 1));
  }

  get(userId: string): KeyPin | undefined {
    return this.pins.get(userId);
  }

  /** Whether there are changes `save()` would store. */
  get dirty(): boolean {
    return this.changes.size > 0 || this.projectChanges.size > 0;
  }

  /** The pinned membership chain of a project: its root and the last head seen. */
  project(projectId: string): ProjectPin | undefined {
    return this.projects.get(projectId);
  }

  /** Every project pin, sorted by project id. */
  listProjects(): ProjectPin[] {
    return [...this.projects.values()].sort((a, b) => (a.project_id < b.project_id ? -1 : 1));
  }

  /**
   * Checks a verified chain against the project's pin: the same root
   * (`chain_changed` otherwise: another project identity), and still holding
   * the statement last seen (`chain_rollback`: the server serves an older or
   * forked chain). Then pins the root on first sight and moves the pinned
   * head forward. Call `save()` after.
   */
  acceptChain(state: MembershipState): 'new' | 'same' | 'grown' {
    const pin = this.projects.get(state.project_id);
    if (pin) {
      if (pin.root !== state.root) {
        throw new VaultError(
          'chain_changed',
          `The server shows project ${state.project_id} with another membership chain (fingerprint ${state.fingerprint}) than the one you accepted: refusing (someone may be substituting the project's members)`,
        );
      }
      if (pin.seq >= state.length || state.hashes[pin.seq] !== pin.head) {
        throw new VaultError(
          'chain_rollback',
          `The server shows the membership chain of project ${state.project_id} without statement ${pin.seq}, which you have seen: refusing (it may be rolling back or forking the chain)`,
        );
      }
      if (pin.seq === state.length - 1) return 'same';
    }
    const next: ProjectPin = {
      project_id: state.project_id,
      root: state.root,
      seq: state.length - 1,
      head: state.head,
      at: pin?.at ?? (this.options.now?.() ?? new Date()).toISOString(),
    };
    this.projects.set(next.project_id, next);
    this.projectChanges.set(next.project_id, next);
    return pin ? 'grown' : 'new';
  }

  /**
   * What the pins say about the keys the server shows for `user`: `new` (not
   * pinned), `tofu` or `verified` (the same keys). Throws `key_changed`, naming
   * the user, when the keys differ from the pinned ones.
   */
  check(user: PinnableUser): 'new' | KeyPinStatus {
    if (user.user_id === this.ownerId) {
      const own = {
        public_key: toBase64url(this.keys.encryption.publicKey),
        signing_public_key: toBase64url(this.keys.signing.publicKey),
      };
      if (
        own.public_key !== user.public_key ||
        own.signing_public_key !== user.signing_public_key
      ) {
        throw new VaultError(
          'key_changed',
          `The server shows keys for your own account (${user.email}) that are not yours: refusing (someone may be substituting keys)`,
        );
      }
      return 'verified';
    }
    const pin = this.pins.get(user.user_id);
    if (!pin) return 'new';
    if (pin.public_key !== user.public_key || pin.signing_public_key !== user.signing_public_key) {
      throw new VaultError(
        'key_changed',
        `The server shows a new key for ${pin.email || user.email} (${user.user_id}), fingerprint ${fingerprint(user.public_key, user.signing_public_key)}, not the one you accepted on ${pin.at.slice(0, 10)} (${fingerprint(pin.public_key, pin.signing_public_key)}, ${pin.status}). Refusing: someone may be substituting keys. If they really have new keys, compare fingerprints with them and verify the new key (coffer keys verify).`,
      );
    }
    return pin.status;
  }

  /**
   * Checks `user` (`key_changed` on a difference) and pins them when new;
   * `verified` upgrades a `tofu` pin of the same keys. Call `save()` after.
   */
  accept(user: PinnableUser, status: KeyPinStatus = 'tofu'): 'new' | KeyPinStatus {
    const before = this.check(user);
    if (user.user_id === this.ownerId) return before;
    if (before === 'new' || (before === 'tofu' && status === 'verified')) this.set(user, status);
    return before;
  }

  /**
   * After comparing `expectedFingerprint` with the user out of band: pins the
   * keys the server shows now as `verified`, replacing a different earlier pin.
   * `fingerprint_mismatch` when the shown keys do not have that fingerprint.
   */
  verify(user: PinnableUser, expectedFingerprint: string): void {
    const actual = fingerprint(user.public_key, user.signing_public_key);
    if (normalizeFingerprint(actual) !== normalizeFingerprint(expectedFingerprint)) {
      throw new VaultError(
        'fingerprint_mismatch',
        `The keys the server shows for ${user.email} have fingerprint ${actual}, not the one you compared`,
      );
    }
    if (user.user_id !== this.ownerId) this.set(user, 'verified');
  }

  /**
   * Stores the changes as version + 1, signed. On a `409` (another device
   * saved meanwhile) fetches the newer document, re-applies these changes and
   * tries again.
   */
  async save(): Promise<void> {
    for (let attempt = 1; this.dirty; attempt++) {
      const projects = this.listProjects();
      const document: KeyPinsDocument = {
        user_id: this.ownerId,
        version: this.currentVersion + 1,
        pins: this.list(),
        ...(projects.length > 0 ? { projects } : {}),
      };
      const signed = signKeyPins(document, this.keys.signing.secretKey);
      try {
        await putKeyPins(this.client, signed);
        this.changes.clear();
        this.projectChanges.clear();
        this.currentVersion = document.version;
        this.options.onVersion?.(this.currentVersion);
        return;
      } catch (error) {
        if (attempt < 3 && error instanceof CofferApiError && error.code === 'version_conflict') {
          const mine = [...this.changes.values()];
          const mineProjects = [...this.projectChanges.values()];
          await this.reload();
          for (const pin of mine) {
            this.pins.set(pin.user_id, pin);
            this.changes.set(pin.user_id, pin);
          }
          for (const pin of mineProjects) {
            const theirs = this.projects.get(pin.project_id);
            // Another device saw the same chain further along: keep the longer view.
            if (theirs && theirs.root === pin.root && theirs.seq >= pin.seq) continue;
            this.projects.set(pin.project_id, pin);
            this.projectChanges.set(pin.project_id, pin);
          }
          continue;
        }
        throw error;
      }
    }
  }

  private set(user: PinnableUser, status: KeyPinStatus): void {
    const pin: KeyPin = {
      user_id: user.user_id,
      email: user.email,
      public_key: user.public_key,
      signing_public_key: user.signing_public_key,
      status,
      at: (this.options.now?.() ?? new Date()).toISOString(),
    };
    this.pins.set(user.user_id, pin);
    this.changes.set(user.user_id, pin);
  }

  private async reload(): Promise<void> {
    const stored = await getKeyPins(this.client);
    const minVersion = Math.max(this.options.minVersion ?? 0, this.currentVersion);
    if (stored.version < minVersion) {
      throw new VaultError(
        'pins_rollback',
        `The server returned your key pins at version ${stored.version}, older than version ${minVersion} you have seen: refusing (the server may be rolling back keys you accepted)`,
      );
    }
    const pins = new Map<string, KeyPin>();
    const projects = new Map<string, ProjectPin>();
    if (stored.version > 0) {
      let document: KeyPinsDocument;
      try {
        document = verifyKeyPins(
          { document: stored.document!, signature: stored.signature! },
          this.keys.signing.publicKey,
        );
      } catch {
        throw new VaultError(
          'pins_rollback',
          'The key pins the server returned are not signed by your key: refusing them',
        );
      }
      if (document.user_id !== this.ownerId || document.version !== stored.version) {
        throw new VaultError('pins_rollback', 'The key pins the server returned are not yours');
      }
      for (const pin of document.pins) pins.set(pin.user_id, pin);
      for (const pin of document.projects ?? []) projects.set(pin.project_id, pin);
    }
    this.pins = pins;
    this.projects = projects;
    this.currentVersion = stored.version;
    this.options.onVersion?.(this.currentVersion);
  }
}
