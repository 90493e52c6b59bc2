import { resolve } from 'node:path';
import { CofferClient, KeyPins, type UserKeys } from '@coffer/sdk';
import { str, type Values } from './cli/command.js';
import { CliError, UsageError } from './cli/errors.js';
import { findProjectLink, type ProjectLink } from './project-link.js';
import { readSession, writeSession, type StoredSession } from './session-store.js';
import { transportFetch } from './transport.js';

const DEFAULT_SERVER = 'https://localhost:8443';
const USER_AGENT = `coffer-cli/0.1.0 (node ${process.version}; ${process.platform})`;

/**
 * Everything a command learns from its surroundings, resolved lazily so a
 * command pays only for what it uses: the server and CA (flags, environment,
 * `.coffer.json`, the stored session), the credential (`COFFER_TOKEN` first,
 * then the session file) and the linked project and environment.
 */
export class Context {
  readonly json: boolean;
  private linkCache: { path: string; link: ProjectLink } | null | undefined;
  private sessionCache: StoredSession | null | undefined;

  constructor(
    readonly values: Values,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.json = values.json === true;
  }

  /** The `.coffer.json` of this directory or a parent. */
  get link(): ProjectLink | null {
    if (this.linkCache === undefined) this.linkCache = findProjectLink();
    return this.linkCache?.link ?? null;
  }

  /** The full `<bearer>.<key part>` credential of a pipeline, if set. */
  get token(): string | null {
    const token = this.env.COFFER_TOKEN?.trim();
    return token ? token : null;
  }

  /** The stored user session; never read when `COFFER_TOKEN` is set. */
  get session(): StoredSession | null {
    if (this.token) return null;
    if (this.sessionCache === undefined) this.sessionCache = readSession();
    return this.sessionCache;
  }

  /** `--server` > `COFFER_SERVER` > `.coffer.json` > the session's server > the local default. */
  server(): string {
    const explicit = str(this.values, 'server') ?? this.env.COFFER_SERVER;
    const raw = explicit || this.link?.server || this.session?.server || DEFAULT_SERVER;
    return normalizeServer(raw);
  }

  /** `--ca` > `COFFER_CA_FILE` > the CA trusted when this server's session was created. */
  caFile(): string | null {
    const explicit = str(this.values, 'ca') ?? this.env.COFFER_CA_FILE;
    if (explicit) return resolve(explicit);
    const session = this.session;
    return session && session.server === this.server() ? session.caFile : null;
  }

  /** A client without credentials (sign-up, login). */
  async anonymousClient(): Promise<CofferClient> {
    return this.makeClient(undefined);
  }

  /** A client with the session of the stored login (commands that need a user). */
  async userClient(): Promise<CofferClient> {
    if (this.token) {
      throw new CliError(
        'user_session_required',
        'this command needs a user login, not COFFER_TOKEN; unset COFFER_TOKEN and run `coffer login`',
      );
    }
    const session = this.requireSession();
    return this.makeClient({ session: session.cookie });
  }

  /** The stored session for the resolved server; a clear error when there is none or it is for another server. */
  requireSession(): StoredSession {
    const session = this.session;
    if (!session)
      throw new CliError(
        'not_logged_in',
        'not logged in: run `coffer login` (or set COFFER_TOKEN)',
      );
    const server = this.server();
    if (session.server !== server) {
      throw new CliError(
        'not_logged_in',
        `you are logged in to ${session.server}, not ${server}: run \`coffer login --server ${server}\``,
      );
    }
    return session;
  }

  /** The logged-in user's key pairs, rebuilt from the session file. */
  userKeys(): UserKeys {
    const { keys } = this.requireSession();
    const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64url'));
    return {
      encryption: { publicKey: bytes(keys.encryptionPublic), secretKey: bytes(keys.encryption) },
      signing: { publicKey: bytes(keys.signingPublic), secretKey: bytes(keys.signing) },
    };
  }

  /** Stores a fresh login for the resolved server (and the CA it was reached with). */
  saveLogin(
    client: CofferClient,
    user: {
      id: string;
      email: string;
      name: string;
      public_key: string;
      signing_public_key: string;
    },
    keys: UserKeys,
  ): StoredSession {
    if (!client.session) throw new CliError('internal_error', 'the server did not start a session');
    const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
    const session: StoredSession = {
      version: 1,
      server: this.server(),
      caFile: this.caFile(),
      cookie: client.session,
      user: { id: user.id, email: user.email, name: user.name },
      keys: {
        encryption: b64(keys.encryption.secretKey),
        encryptionPublic: b64(keys.encryption.publicKey),
        signing: b64(keys.signing.secretKey),
        signingPublic: b64(keys.signing.publicKey),
      },
      createdAt: new Date().toISOString(),
    };
    // Logging in again as the same user keeps the rollback guard of the key pins.
    let previous: StoredSession | null = null;
    try {
      previous = readSession();
    } catch {
      previous = null;
    }
    if (previous?.server === session.server && previous.user.id === session.user.id) {
      if (previous.keyPinsVersion !== undefined) session.keyPinsVersion = previous.keyPinsVersion;
    }
    writeSession(session);
    this.sessionCache = session;
    return session;
  }

  /**
   * The logged-in user's key pins, verified with their own key; refuses a
   * version below the one remembered in the session file, and remembers each
   * higher version it loads or saves.
   */
  async keyPins(client: CofferClient): Promise<KeyPins> {
    const session = this.requireSession();
    return KeyPins.load(
      client,
      { userId: session.user.id, keys: this.userKeys() },
      {
        minVersion: session.keyPinsVersion ?? 0,
        onVersion: (version) => {
          const current = this.requireSession();
          if (version > (current.keyPinsVersion ?? 0)) {
            const updated = { ...current, keyPinsVersion: version };
            writeSession(updated);
            this.sessionCache = updated;
          }
        },
      },
    );
  }

  hasProjectRef(): boolean {
    return Boolean(str(this.values, 'project') ?? this.env.COFFER_PROJECT ?? this.link?.project);
  }

  /** A client with COFFER_TOKEN's bearer if set, else with the stored login. */
  async client(): Promise<CofferClient> {
    if (!this.token) return this.userClient();
    return this.makeClient({ bearer: this.token.split('.')[0]! });
  }

  /** The project: `--project`, else `.coffer.json`. Names are resolved by the caller (needs the API). */
  projectRef(): string {
    const ref = str(this.values, 'project') ?? this.env.COFFER_PROJECT ?? this.link?.project;
    if (!ref) {
      throw new CliError(
        'no_project',
        'no project: pass --project, or run `coffer setup` to link this directory',
      );
    }
    return ref;
  }

  /** The environment as named by `--env`, `COFFER_ENV` or `.coffer.json`, if any. */
  environmentName(): string | undefined {
    return str(this.values, 'env') ?? this.env.COFFER_ENV ?? this.link?.environment;
  }

  /** The environment: `--env`, else `.coffer.json`. */
  environmentRef(): string {
    const ref = this.environmentName();
    if (!ref) {
      throw new CliError(
        'no_environment',
        'no environment: pass --env, or run `coffer setup` to link this directory',
      );
    }
    return ref;
  }

  /** A client for a stored session, on the server and with the CA it was created with. */
  sessionClient(session: StoredSession): Promise<CofferClient> {
    return this.makeClient({ session: session.cookie }, session.server, session.caFile);
  }

  private async makeClient(
    credential: { session: string } | { bearer: string } | undefined,
    server = this.server(),
    caFile = this.caFile(),
  ): Promise<CofferClient> {
    return new CofferClient({
      baseUrl: server,
      fetch: await transportFetch(caFile),
      userAgent: USER_AGENT,
      ...(credential ? { credential } : {}),
    });
  }
}

/**
 * The server URL without a trailing slash; plain http only to this machine
 * (the SDK enforces it too; checking here gives the error before any work).
 */
function normalizeServer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`not a valid server URL: ${raw}`);
  }
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol === 'http:' && !local) {
    throw new CliError(
      'insecure_server_url',
      `refusing plain http:// to ${url.hostname}: use https:// (http is allowed only to localhost)`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new CliError('insecure_server_url', `unsupported protocol ${url.protocol} in ${raw}`);
  }
  return url.origin + url.pathname.replace(/\/+$/, '');
}
