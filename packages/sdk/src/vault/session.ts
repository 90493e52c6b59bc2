import {
  deriveEnvironmentKey,
  openGrant,
  ready,
  toBase64url,
  wasChainAdmin,
  type MembershipState,
} from '../crypto/index.js';
import { sodium } from '../crypto/sodium.js';
import type { CofferClient } from '../client/http.js';
import type { EnvironmentKeyProvider, SecretScope } from '../client/secrets.js';
import { getVault, type StoredGrant, type VaultStatus } from '../client/vault.js';
import { VaultError } from './errors.js';
import type { KeyPins } from './key-pins.js';
import { getMembershipChain } from '../client/membership-chain.js';
import { checkMembershipChain } from './chain.js';
import type { VaultKeys } from './keys.js';
import { overrideKeyOf, type OverrideKey } from '../client/overrides.js';

export interface OpenVaultOptions {
  /**
   * Whether to accept `signingPublicKey` as the key of `granterId`, who signed one
   * of the caller's grants. The server reports that key; a client that has
   * compared fingerprints out of band can pin it here. Grants you signed yourself
   * are always checked against your own key, whatever this says. Default: accept.
   */
  trustGranter?: (granterId: string, signingPublicKey: string) => boolean | Promise<boolean>;
  /**
   * The signed-in user's key pins (`KeyPins.load`; a promise is fine, so it
   * loads alongside the vault). The keys of each user who signed one of the
   * caller's grants must match their pin (`key_changed`, naming the user,
   * otherwise); an unpinned granter is pinned on first use and the pins saved.
   * Absent: granters' keys are taken as the server shows them (or `trustGranter`).
   */
  pins?: KeyPins | Promise<KeyPins>;
  /**
   * The only Ed25519 key (base64url) accepted as the signer of the caller's
   * grants: a token's creator, as its version 2 key part binds it
   * (`parseCredential(…).creatorSigningPublicKey`). A grant signed by any other
   * key is refused (`untrusted_granter`), whatever the server says about its
   * granter. Absent: granters' keys are taken as the server shows them.
   */
  granterSigningPublicKey?: string | null;
  /**
   * The root (link hash, base64url) of the project's membership chain, as a
   * token's version 3 key part binds it (`parseCredential(…).chainRoot`). The
   * chain the server serves must start there (`chain_changed`), and then a
   * grant signed by any admin of that chain is accepted besides the creator's:
   * tokens keep working after another admin re-keys.
   */
  chainRoot?: string | null;
}

/** An environment key and the epoch it belongs to: what encrypts and decrypts that environment's values. */
export interface EnvironmentKey {
  key: Uint8Array;
  epoch: number;
}

/** Who signs the grants this session makes: a member's user id, or an API key's id. */
export interface Signer {
  id: string;
  signingSecretKey: Uint8Array;
}

/**
 * The caller's opened view of one project's vault. Members hold the project key
 * (PMK) and derive any environment key from it; tokens hold the environment keys
 * of their scopes. This is the "environment key provider" the secrets client
 * uses: `environmentKey(environmentId)` (or `(projectId, environmentId)`).
 * Call `refresh()` after a `stale_epoch` conflict: a re-key moved the epoch.
 */
export class VaultSession implements EnvironmentKeyProvider {
  private current: VaultStatus | null = null;
  private chainState: MembershipState | null = null;
  private projectKeyBytes: Uint8Array | null = null;
  private readonly environmentKeys = new Map<string, Uint8Array>();

  constructor(
    readonly client: CofferClient,
    readonly projectId: string,
    private readonly keys: VaultKeys,
    private readonly options: OpenVaultOptions = {},
  ) {}

  /** The vault as last fetched: epoch, `rekey_recommended`, and for admins `pending_grants`. */
  get status(): VaultStatus {
    if (!this.current) throw new VaultError('not_initialized', 'Call refresh() first');
    return this.current;
  }

  get epoch(): number {
    return this.status.epoch;
  }

  /** Who the grants are addressed to: `{ type: 'user' | 'api_key' | 'ci_token', id }`. */
  get recipient(): VaultStatus['recipient'] {
    return this.status.recipient;
  }

  /** What the secrets client's decrypted operations take: `getSecret(vault.scope, 'staging', 'NAME')`. */
  get scope(): SecretScope {
    return { client: this.client, projectId: this.projectId, keys: this };
  }

  get signer(): Signer {
    return { id: this.recipient.id, signingSecretKey: this.keys.signing.secretKey };
  }

  /** The caller's own public keys, base64url. */
  get publicKeys(): { publicKey: string; signingPublicKey: string } {
    return {
      publicKey: toBase64url(this.keys.encryption.publicKey),
      signingPublicKey: toBase64url(this.keys.signing.publicKey),
    };
  }

  /**
   * The project's signed membership chain as last verified (null: the project
   * has none yet; `unchained` then warns). Grants are accepted only from
   * users the chain made admin, with the keys it holds for them.
   */
  get chain(): MembershipState | null {
    return this.chainState;
  }

  /** Whether the project has no membership chain yet: accepted with a warning until an admin signs one. */
  get unchained(): boolean {
    return this.current !== null && this.chainState === null;
  }

  /** The project's fingerprint (its chain's root), or null while unchained. */
  get projectFingerprint(): string | null {
    return this.chainState?.fingerprint ?? null;
  }

  /**
   * The chain root a token made by this session may bind (key part version 3):
   * a member's verified chain, or a token's when its own credential bound the root.
   */
  get trustedChainRoot(): string | null {
    if (!this.chainState) return null;
    if (this.recipient.type === 'user' || this.options.chainRoot) return this.chainState.root;
    return null;
  }

  /** Takes a chain this session has just verified or signed (`signStatements`). */
  adoptChain(state: MembershipState | null): void {
    if (state && (!this.chainState || state.length >= this.chainState.length)) {
      this.chainState = state;
    }
  }

  /** The key pins given in the options (awaited), if any. */
  async pins(): Promise<KeyPins | undefined> {
    return this.options.pins;
  }

  /** Fetches the vault again and opens the caller's grants for the current epoch. */
  async refresh(): Promise<void> {
    await ready();
    // Both requests leave before either is awaited.
    const [status, chain, pins] = await Promise.all([
      getVault(this.client, this.projectId),
      getMembershipChain(this.client, this.projectId),
      this.options.pins,
    ]);
    const previous = this.chainState;
    this.chainState = checkMembershipChain(chain.statements, this.projectId, {
      pins,
      root: this.options.chainRoot,
    });
    if (
      previous &&
      (!this.chainState || this.chainState.hashes[previous.length - 1] !== previous.head)
    ) {
      this.chainState = previous;
      throw new VaultError(
        'chain_rollback',
        `The server now shows the membership chain of project ${this.projectId} without statements this session has seen: refusing`,
      );
    }
    const projectKey: Uint8Array[] = [];
    const environmentKeys = new Map<string, Uint8Array>();
    for (const grant of status.grants) {
      const key = await this.open(grant, status, pins);
      if (grant.kind === 'project_key') projectKey.push(key);
      else environmentKeys.set(grant.environment_id!, key);
    }
    if (pins?.dirty) await pins.save();
    this.forget();
    this.current = status;
    this.projectKeyBytes = projectKey[0] ?? null;
    for (const [id, key] of environmentKeys) this.environmentKeys.set(id, key);
  }

  /** Whether the caller can decrypt anything at all (viewers cannot). */
  get holdsKeys(): boolean {
    return this.projectKeyBytes !== null || this.environmentKeys.size > 0;
  }

  /**
   * The key of one environment at the current epoch. Accepts `(environmentId)`
   * or `(projectId, environmentId)`, the shape the secrets client asks for.
   */
  async environmentKey(first: string, second?: string): Promise<EnvironmentKey> {
    const environmentId = second ?? first;
    if (second !== undefined && first !== this.projectId) {
      throw new VaultError(
        'unknown_environment',
        `This vault session is for project ${this.projectId}, not ${first}`,
      );
    }
    if (!this.current) await this.refresh();
    const epoch = this.epoch;
    if (epoch === 0) throw notInitialized(this.projectId);
    const cached = this.environmentKeys.get(environmentId);
    if (cached) return { key: cached, epoch };
    if (this.projectKeyBytes) {
      const key = deriveEnvironmentKey(this.projectKeyBytes, this.projectId, environmentId, epoch);
      this.environmentKeys.set(environmentId, key);
      return { key, epoch };
    }
    if (this.recipient.type === 'user') {
      throw new VaultError(
        'no_grant',
        'You hold no key for this project: viewers never do, and a new member waits until an admin grants it',
      );
    }
    throw new VaultError(
      'out_of_scope',
      `This token holds no key for environment ${environmentId}: it is outside its scopes`,
    );
  }

  /** The project key at the current epoch (members only): for granting it and re-keying. */
  projectKey(): EnvironmentKey {
    if (this.recipient.type !== 'user') {
      throw new VaultError(
        'not_a_member',
        'Only members hold the project key; tokens hold environment keys',
      );
    }
    if (this.epoch === 0) throw notInitialized(this.projectId);
    if (!this.projectKeyBytes) {
      throw new VaultError(
        'no_grant',
        'You hold no grant of the project key for the current epoch',
      );
    }
    return { key: this.projectKeyBytes, epoch: this.epoch };
  }

  /** Whether this is a member's session (known once the vault was fetched). */
  get member(): boolean | undefined {
    return this.current ? this.current.recipient.type === 'user' : undefined;
  }

  /**
   * A member's override key (derived from their own X25519 private key), which
   * opens their personal overrides; null for tokens, which never see any.
   */
  async overrideKey(): Promise<OverrideKey | null> {
    if (!this.current) await this.refresh();
    if (this.recipient.type !== 'user') return null;
    return overrideKeyOf(this.recipient.id, this.keys.encryption.secretKey);
  }

  /** Best-effort erasure of the keys held in memory. */
  forget(): void {
    const lib = sodium();
    if (this.projectKeyBytes) lib.memzero(this.projectKeyBytes);
    for (const key of this.environmentKeys.values()) lib.memzero(key);
    this.projectKeyBytes = null;
    this.environmentKeys.clear();
  }

  private async open(
    grant: StoredGrant,
    status: VaultStatus,
    pins: KeyPins | undefined,
  ): Promise<Uint8Array> {
    const own = grant.granter_id === status.recipient.id;
    const granterKey = own
      ? toBase64url(this.keys.signing.publicKey)
      : grant.granter_signing_public_key;
    if (!granterKey) {
      throw new VaultError(
        'untrusted_granter',
        `The signer of a grant (${grant.granter_id}) has no known key`,
      );
    }
    const chain = this.chainState;
    const chainAdmin = chain !== null && wasChainAdmin(chain, grant.granter_id, granterKey);
    const bound = this.options.granterSigningPublicKey;
    // A token bound to its chain's root accepts grants of any admin of that chain.
    const rootBound = chain !== null && !!this.options.chainRoot;
    if (!own && rootBound && granterKey === bound && !chainAdmin) {
      // The token's creator signed this grant: a member of the chain must still
      // be one (a creator that is no member, an API key minting a CI token, is
      // vouched for by the credential alone).
      const creatorId = chain.everSigningKeys.get(bound);
      const creator = creatorId === undefined ? undefined : chain.members.get(creatorId);
      if (
        creatorId !== undefined &&
        (creator?.signing_public_key !== bound || creator.role === 'viewer')
      ) {
        throw new VaultError(
          'untrusted_granter',
          `This token's creator (${creatorId}) is no longer an admin or developer in the project's signed membership chain: refusing the grants they signed`,
        );
      }
    }
    if (!own && bound && granterKey !== bound && !(rootBound && chainAdmin)) {
      throw new VaultError(
        'untrusted_granter',
        `A grant of this token is signed by ${grant.granter_email ?? grant.granter_id} with a key other than that of the token's creator, which the credential names. Refusing it: the server may be substituting keys. If an admin other than the creator re-keyed the project since, have the token re-created.`,
      );
    }
    if (!own && pins && grant.granter_id.startsWith('usr_')) {
      if (!grant.granter_public_key) {
        throw new VaultError(
          'untrusted_granter',
          `The server does not show the keys of ${grant.granter_email ?? grant.granter_id}, who signed your grant`,
        );
      }
      // key_changed (naming the granter) when the server shows another key than the pinned one.
      pins.accept({
        user_id: grant.granter_id,
        email: grant.granter_email ?? '',
        public_key: grant.granter_public_key,
        signing_public_key: granterKey,
      });
    }
    if (!own && chain && status.recipient.type === 'user' && !chainAdmin) {
      throw new VaultError(
        'untrusted_granter',
        `Your grant is signed by ${grant.granter_email ?? grant.granter_id}, whom the project's signed membership chain does not show as an admin with that key: refusing it (someone may be planting a key)`,
      );
    }
    if (
      !own &&
      this.options.trustGranter &&
      !(await this.options.trustGranter(grant.granter_id, granterKey))
    ) {
      throw new VaultError('untrusted_granter', `The key of ${grant.granter_id} is not trusted`);
    }
    return openGrant(grant, {
      recipientPublicKey: this.keys.encryption.publicKey,
      recipientSecretKey: this.keys.encryption.secretKey,
      granterSigningPublicKey: granterKey,
      expected: {
        projectId: this.projectId,
        epoch: status.epoch,
        // A member's grant is the project key; a token's, an environment key (the
        // environment is covered by the signature).
        kind: status.recipient.type === 'user' ? 'project_key' : 'environment_key',
        environmentId: grant.environment_id,
        recipientId: status.recipient.id,
      },
    });
  }
}

const notInitialized = (projectId: string) =>
  new VaultError('not_initialized', `The vault of project ${projectId} is not initialised yet`);

/** Opens the caller's grants of a project: members with their user keys, tokens with their key-part keys. */
export async function openVault(
  client: CofferClient,
  projectId: string,
  keys: VaultKeys,
  options: OpenVaultOptions = {},
): Promise<VaultSession> {
  const session = new VaultSession(client, projectId, keys, options);
  await session.refresh();
  return session;
}
