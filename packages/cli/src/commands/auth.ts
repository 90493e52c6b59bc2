import { fingerprint, isCofferApiError, logIn, logOut, me, ready, signUp } from '@coffer/sdk';
import { str, type Command, type Values } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson, printLine } from '../cli/output.js';
import { ask, interactive, readPasswordFromStdin } from '../cli/prompt.js';
import { Context } from '../context.js';
import { invitationToken } from '../resolve.js';
import { deleteSession, readSession, sessionPath, type StoredSession } from '../session-store.js';

/** The shortest password the CLI accepts at sign-up (the server never sees it, so the client checks). */
const MIN_PASSWORD_LENGTH = 10;

const EMAIL = { type: 'string', value: 'EMAIL', description: 'your e-mail address' } as const;
const PASSWORD_STDIN = {
  type: 'boolean',
  description: 'read the password from the first line of standard input (for scripts)',
} as const;

async function field(
  values: Values,
  name: string,
  question: string,
  command: string,
): Promise<string> {
  const given = str(values, name);
  if (given !== undefined) return given.trim();
  if (!interactive()) throw new UsageError(`missing --${name}`, command);
  return (await ask(question)).trim();
}

async function password(values: Values, command: string, repeat: boolean): Promise<string> {
  if (values['password-stdin']) return readPasswordFromStdin();
  if (!interactive()) throw new UsageError('no password: pass --password-stdin', command);
  const first = await ask('Password: ', { hidden: true });
  if (repeat && (await ask('Repeat the password: ', { hidden: true })) !== first) {
    throw new CliError('validation_error', 'the passwords do not match');
  }
  return first;
}

const signup: Command = {
  name: 'signup',
  summary: 'create an account on the server and log in',
  description:
    'Prompts for anything not given as an option. Your password never leaves this machine: the server receives a key derived from it. Prints your recovery key ONCE: store it offline, it is the only way back in if you forget your password.',
  options: {
    email: EMAIL,
    name: { type: 'string', value: 'NAME', description: 'your name as others see it' },
    'password-stdin': PASSWORD_STDIN,
    invitation: {
      type: 'string',
      value: 'LINK',
      description: 'the link (or token) from an invitation e-mail; needed on invite-only servers',
    },
  },
  async run({ values }) {
    const ctx = new Context(values);
    const email = await field(values, 'email', 'E-mail: ', 'signup');
    const name = await field(values, 'name', 'Name: ', 'signup');
    const secret = await password(values, 'signup', true);
    if ([...secret].length < MIN_PASSWORD_LENGTH) {
      throw new CliError(
        'validation_error',
        `the password must have at least ${MIN_PASSWORD_LENGTH} characters`,
      );
    }
    const client = await ctx.anonymousClient();
    const token = invitationToken(str(values, 'invitation'));
    const result = await signUp(client, {
      email,
      name,
      password: secret,
      ...(token ? { invitationToken: token } : {}),
    });
    ctx.saveLogin(client, result.user, result.keys);
    if (ctx.json) {
      printJson({ user: result.user, recovery_key: result.recoveryKey });
      return;
    }
    note(`Signed up and logged in as ${result.user.email} (${result.user.id}) on ${ctx.server()}.`);
    note(
      'Your recovery key, shown only now. Store it offline: it restores access if you forget your password.',
    );
    printLine(result.recoveryKey);
  },
};

const login: Command = {
  name: 'login',
  summary: 'log in and keep the session on this machine',
  description: `The session and your unlocked private keys are stored in ${sessionPath()} (mode 0600), so later commands never prompt. Use --ca FILE to trust a self-signed server certificate; it is remembered with the session.`,
  options: { email: EMAIL, 'password-stdin': PASSWORD_STDIN },
  async run({ values }) {
    const ctx = new Context(values);
    const email = await field(values, 'email', 'E-mail: ', 'login');
    const secret = await password(values, 'login', false);
    const client = await ctx.anonymousClient();
    const result = await logIn(client, { email, password: secret });
    ctx.saveLogin(client, result.user, result.keys);
    if (ctx.json) printJson({ user: result.user, server: ctx.server() });
    else note(`Logged in as ${result.user.email} (${result.user.id}) on ${ctx.server()}.`);
  },
};

const logout: Command = {
  name: 'logout',
  summary: 'end the session on the server and delete it from this machine',
  async run({ values }) {
    const ctx = new Context(values);
    let session: StoredSession | null;
    try {
      session = readSession();
    } catch (err) {
      // An unusable file (too open, corrupt) is exactly what logging out should remove.
      if (!(err instanceof CliError) || !deleteSession()) throw err;
      if (ctx.json) printJson({ logged_out: true, ended_on_server: false });
      else note(`Deleted ${sessionPath()} without using it (${err.message.split(':')[0]}).`);
      return;
    }
    if (!session) {
      if (ctx.json) printJson({ logged_out: false });
      else note('Not logged in.');
      return;
    }
    let ended = true;
    try {
      await logOut(await ctx.sessionClient(session));
    } catch (err) {
      // The local copy goes regardless: a session the server already ended or
      // cannot be reached about must not stay on disk.
      const expected =
        isCofferApiError(err) || (err instanceof Error && err.name === 'CofferNetworkError');
      if (!expected) throw err;
      ended = false;
      note(
        `coffer: the server could not end the session (${err.message}); deleting it locally anyway`,
      );
    }
    deleteSession();
    if (ctx.json) printJson({ logged_out: true, ended_on_server: ended });
    else note(`Logged out of ${session.server}.`);
  },
};

const whoami: Command = {
  name: 'whoami',
  summary: 'show the logged-in user (or the token in COFFER_TOKEN)',
  async run({ values }) {
    const ctx = new Context(values);
    if (ctx.token) {
      const bearer = ctx.token.split('.')[0] ?? '';
      const kind = bearer.startsWith('ci_') ? 'ci_token' : 'api_key';
      if (ctx.json)
        printJson({ credential: kind, bearer_prefix: bearer.slice(0, 10), server: ctx.server() });
      else
        printLine(
          `${kind === 'ci_token' ? 'CI token' : 'API key'} ${bearer.slice(0, 10)}… from COFFER_TOKEN on ${ctx.server()}`,
        );
      return;
    }
    const client = await ctx.userClient();
    const [user] = await Promise.all([me(client), ready()]);
    const keyFingerprint = fingerprint(user.public_key, user.signing_public_key);
    if (ctx.json) return printJson({ user, fingerprint: keyFingerprint, server: ctx.server() });
    printLine(`${user.name} <${user.email}> (${user.id}) on ${ctx.server()}`);
    printLine(`Key fingerprint: ${keyFingerprint}`);
  },
};

export const commands: Command[] = [signup, login, logout, whoami];
