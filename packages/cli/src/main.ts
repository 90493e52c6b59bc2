// The `coffer` entry point. It only dispatches: each command group lives in its
// own module, imported when that group runs, so `coffer run` never pays for
// the code of `vault rekey` (startup time is the CLI's main performance target).
import { commandHelp, parseCommand, type Command } from './cli/command.js';
import { describeError, EXIT_ERROR, EXIT_USAGE, UsageError } from './cli/errors.js';

/** The version of packages/cli/package.json, put in by the build (scripts/build.mjs, build-sea.mjs). */
declare const COFFER_VERSION: string | undefined;
const VERSION = typeof COFFER_VERSION === 'string' ? COFFER_VERSION : '0.0.0-unbuilt';

interface Group {
  summary: string;
  load(): Promise<{ commands: Command[] }>;
}

const GROUPS: Record<string, Group> = {
  signup: {
    summary: 'create an account (prints your recovery key once)',
    load: () => import('./commands/auth.js'),
  },
  login: {
    summary: 'log in and store the session on this machine',
    load: () => import('./commands/auth.js'),
  },
  logout: {
    summary: 'end the session and forget it on this machine',
    load: () => import('./commands/auth.js'),
  },
  whoami: { summary: 'show who you are logged in as', load: () => import('./commands/auth.js') },
  setup: {
    summary: 'link this directory to a project and environment',
    load: () => import('./commands/setup.js'),
  },
  projects: {
    summary: 'list, create and delete projects',
    load: () => import('./commands/projects.js'),
  },
  envs: {
    summary: "list, create, rename and delete a project's environments",
    load: () => import('./commands/envs.js'),
  },
  members: {
    summary: 'list, invite, change the role of and remove members',
    load: () => import('./commands/members.js'),
  },
  invitations: {
    summary: 'your invitations: list, accept, decline',
    load: () => import('./commands/members.js'),
  },
  vault: {
    summary: 'vault status, grant a member access, re-key, the signed membership chain',
    load: () => import('./commands/vault.js'),
  },
  keys: {
    summary: 'the keys you accepted for others: list, verify after a fingerprint comparison',
    load: () => import('./commands/keys.js'),
  },
  secrets: {
    summary: 'list, get, set, delete, import and export secrets',
    load: () => import('./commands/secrets.js'),
  },
  run: {
    summary: "run a command with the environment's secrets",
    load: () => import('./commands/run.js'),
  },
  scan: {
    summary: "find the team's secret values where they leaked",
    load: () => import('./commands/scan.js'),
  },
  'api-keys': {
    summary: 'create, list and revoke API keys',
    load: () => import('./commands/tokens.js'),
  },
  'ci-tokens': {
    summary: 'create, list and revoke short-lived CI tokens',
    load: () => import('./commands/tokens.js'),
  },
  webhooks: {
    summary: 'signed webhooks of the change feed: create, update, test, rotate, delivery log',
    load: () => import('./commands/webhooks.js'),
  },
};

function mainHelp(): string {
  const width = Math.max(...Object.keys(GROUPS).map((n) => n.length));
  return [
    'Usage: coffer <command> [options]',
    '',
    'Coffer: end-to-end encrypted secrets for teams and pipelines.',
    '',
    'Commands:',
    ...Object.entries(GROUPS).map(([name, g]) => `  ${name.padEnd(width)}  ${g.summary}`),
    '',
    'Run `coffer <command> --help` for a command’s options.',
    'Credentials: COFFER_TOKEN (an API key or CI token) or the session stored by `coffer login`.',
    'Exit codes: 0 ok, 1 error, 2 usage; `coffer run` exits with the child’s code;',
    '`coffer scan`: 0 nothing found, 1 findings, 2 error.',
    '',
  ].join('\n');
}

function groupHelp(group: string, commands: Command[]): string {
  const subs = commands.filter((c) => c.name.startsWith(`${group} `));
  const summary = GROUPS[group]?.summary ?? 'your personal overrides: values only you can read';
  const width = Math.max(...subs.map((c) => c.name.length));
  return [
    `Usage: coffer ${group} <command> [options]`,
    '',
    summary,
    '',
    'Commands:',
    ...subs.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Run \`coffer ${group} <command> --help\` for a command’s options.`,
    '',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [first, ...afterFirst] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(mainHelp());
    return first === undefined ? EXIT_USAGE : 0;
  }
  if (first === '--version' || first === '-V') {
    process.stdout.write(`coffer ${VERSION}\n`);
    return 0;
  }
  const group = Object.hasOwn(GROUPS, first) ? GROUPS[first] : undefined;
  if (!group) throw new UsageError(`unknown command "${first}"; see coffer --help`);
  const { commands } = await group.load();

  let command = commands.find((c) => c.name === first);
  let rest = afterFirst;
  if (!command) {
    const [sub, ...args] = afterFirst;
    if (sub === undefined || sub === '--help' || sub === '-h') {
      process.stdout.write(groupHelp(first, commands));
      return sub === undefined ? EXIT_USAGE : 0;
    }
    command = commands.find((c) => c.name === `${first} ${sub}`);
    rest = args;
    // Three words: `secrets override set`.
    const [third, ...after] = args;
    const nested = commands.filter((c) => c.name.startsWith(`${first} ${sub} `));
    if (!command && nested.length > 0) {
      if (third === undefined || third === '--help' || third === '-h') {
        process.stdout.write(groupHelp(`${first} ${sub}`, nested));
        return third === undefined ? EXIT_USAGE : 0;
      }
      command = nested.find((c) => c.name === `${first} ${sub} ${third}`);
      if (!command) throw new UsageError(`unknown command "${first} ${sub} ${third}"`, first);
      rest = after;
    }
    if (!command) throw new UsageError(`unknown command "${first} ${sub}"`, first);
  }
  const input = parseCommand(command, rest, command.name === 'run');
  if (input.values.help) {
    process.stdout.write(commandHelp(command));
    return 0;
  }
  return (await command.run(input)) ?? 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const { line, exitCode } = describeError(err);
    process.stderr.write(`coffer: ${line}\n`);
    if (process.env.COFFER_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exit(exitCode ?? EXIT_ERROR);
  },
);
