import { ready } from '@coffer/sdk';
import { str, type Command } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note } from '../cli/output.js';
import { Context } from '../context.js';
import { runChild } from '../run/child.js';
import { readFallback, writeFallback } from '../run/fallback.js';
import { fetchEnvironmentSecrets, isServerUnreachable, READ_OPTIONS } from '../secrets-source.js';
import { RUN_WATCH_OPTIONS, runWatchCommand } from '../watch.js';

const run: Command = {
  name: 'run',
  summary: "run a command with the environment's secrets in its environment",
  args: '-- CMD [ARGS…]',
  description: [
    'Fetches and decrypts the secrets of one environment, then runs CMD with them added to',
    'the current environment (a secret overrides a variable of the same name). Signals',
    '(SIGINT, SIGTERM, SIGHUP, …) are passed on to CMD, and coffer exits with its exit code',
    '(128 + N when signal N ended it). Plaintext is never written to disk.',
    '',
    'With --fallback FILE, every successful fetch also refreshes an encrypted copy in FILE',
    '(mode 0600, encrypted with a key derived from your private key or the token’s key part);',
    'when the server cannot be reached, CMD runs with that copy instead and coffer says so',
    'on stderr. Authentication and permission errors never fall back.',
    '',
    'References inside values (${KEY}, ${ENV.KEY}, ${PROJECT/ENV.KEY}) are resolved on this',
    'machine; if one cannot be (a cycle, a missing secret, an environment this credential cannot',
    'read), CMD does not run and coffer names the secret and the reference. With your login, your',
    'personal overrides replace the team values of the same names (--no-overrides: leave them out).',
    '',
    'With --watch, CMD is restarted with the new values whenever the secrets change (SIGTERM,',
    'then SIGKILL after --grace), or sent --signal instead; --on-change runs a command after each',
    'change. Changes within a second are one restart. If the server is unreachable CMD keeps',
    'running on the last values while coffer reconnects; coffer exits with CMD’s code when CMD',
    'exits on its own.',
    '',
    'Credentials: COFFER_TOKEN (an API key or CI token) if set, else your login.',
  ].join('\n'),
  options: {
    project: {
      type: 'string',
      short: 'p',
      value: 'PROJECT',
      description: 'project id or name (default: .coffer.json; a token’s own project)',
    },
    env: {
      type: 'string',
      short: 'e',
      value: 'ENV',
      description: 'environment slug or id (default: .coffer.json; a CI token’s only environment)',
    },
    fallback: {
      type: 'string',
      value: 'FILE',
      description: 'keep an encrypted copy in FILE and use it when the server is unreachable',
    },
    ...READ_OPTIONS,
    ...RUN_WATCH_OPTIONS,
  },
  positionals: [0, 0],
  async run({ values, rest }) {
    const [command, ...args] = rest;
    if (command === undefined)
      throw new UsageError('missing the command to run (coffer run [--env E] -- CMD ARGS…)', 'run');
    // libsodium takes tens of milliseconds to load: start now, so it overlaps
    // with reading the credential and the first round trip instead of following them.
    ready().catch(() => undefined);
    const watching = runWatchCommand(values, command, args);
    if (watching) return watching;
    const ctx = new Context(values);
    const fallbackFile = str(values, 'fallback');

    let secrets: Record<string, string>;
    try {
      const fetched = await fetchEnvironmentSecrets(ctx, values);
      secrets = fetched.secrets;
      if (fallbackFile) writeFallback(fallbackFile, fetched.keyMaterial, fetched.scope, secrets);
    } catch (err) {
      if (!fallbackFile || !isServerUnreachable(err)) throw err;
      const source = await fallbackSource(ctx);
      const copy = readFallback(fallbackFile, source.keyMaterial, source.scope);
      note(
        `coffer: the server is unreachable (${(err as Error).message}); using the encrypted fallback copy from ${copy.fetchedAt}`,
      );
      secrets = copy.secrets;
    }
    return runChild(command, args, { ...process.env, ...secrets });
  },
};

/** What opens the fallback copy offline: the same key material and scope the fetch would have used. */
async function fallbackSource(ctx: Context) {
  const { offlineSource } = await import('../secrets-source.js');
  try {
    return offlineSource(ctx);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError('fallback_unavailable', (err as Error).message);
  }
}

export const commands: Command[] = [run];
