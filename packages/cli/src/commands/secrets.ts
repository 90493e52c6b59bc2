import { readFileSync, writeFileSync } from 'node:fs';
import {
  allEnvironments,
  compareEnvironments,
  deleteOverride,
  deleteSecret,
  hasReferences,
  listMemberOverrides,
  parseValue,
  readOverrides,
  setOverride,
  exportSecrets,
  getEnvironment,
  getSecret,
  history as secretHistory,
  importSecrets,
  isCofferApiError,
  formatGithubEnv,
  formatGithubMasks,
  formatSecrets,
  isDns1123Label,
  isDns1123Subdomain,
  listSecretEnvelopes,
  listSecrets,
  listSecretVersions,
  rollback as rollbackSecret,
  setSecret,
  type CofferClient,
} from '@coffer/sdk';
import { formatJson, parseDotenv, UnwritableValueError, type DotenvDialect } from '@coffer/sdk';
import { ENV_OPTION, PROJECT_OPTION, str, YES_OPTION, type Command } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson, printLine, printTable, shortTime } from '../cli/output.js';
import { ask, confirmDestructive, interactive, readStdin } from '../cli/prompt.js';
import { Context } from '../context.js';
import { allPages } from '../resolve.js';
import { currentProjectId } from '../scope.js';
import { environmentAccess, READ_OPTIONS, readOptions, secretScope } from '../secrets-source.js';
import { findMember } from './members.js';
import { EXPORT_WATCH_OPTIONS, exportToFileCommand } from '../watch.js';
import { openProjectVault } from '../vault-access.js';

const SCOPE = { ...PROJECT_OPTION, ...ENV_OPTION };
const EXPORT_FORMATS = ['dotenv', 'json', 'yaml', 'shell', 'github', 'k8s'] as const;
const IMPORT_FORMATS = ['dotenv', 'json'] as const;

const list: Command = {
  name: 'secrets list',
  summary: 'list the secret names of an environment (no values)',
  options: SCOPE,
  async run({ values }) {
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const secrets = await allPages((page, per_page) =>
      listSecretEnvelopes(access.client, access.project, access.env, {
        page,
        per_page,
        sort: 'name',
        order: 'asc',
      }),
    );
    const rows = secrets.map(({ value: _value, ...meta }) => meta);
    if (ctx.json) return printJson(rows);
    printTable(
      ['name', 'version', 'updated', 'comment'],
      rows.map((s) => [s.name, s.version, shortTime(s.updated_at), s.comment || '']),
    );
  },
};

const get: Command = {
  name: 'secrets get',
  summary: 'print the decrypted value of one secret',
  args: 'NAME',
  positionals: [1, 1],
  description:
    'Prints the value a program would see: its ${…} references resolved and, with your login, your personal override of NAME if you set one. --raw prints the text as stored.',
  options: { ...SCOPE, ...READ_OPTIONS },
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const secret = await getSecret(
      secretScope(access),
      access.env,
      positionals[0]!,
      readOptions(ctx, access, values),
    );
    if (ctx.json) return printJson(secret);
    process.stdout.write(`${secret.value}\n`);
  },
};

/** VALUE as given, or all of standard input (--stdin), or typed on a terminal without echo. */
async function valueArgument(
  given: string | undefined,
  values: Parameters<typeof str>[0],
  prompt: string,
  command: string,
): Promise<string> {
  if (given !== undefined) return given;
  if (values.stdin === true) return (await readStdin()).replace(/\r?\n$/, '');
  if (interactive()) return ask(prompt, { hidden: true });
  throw new UsageError('missing VALUE: pass it, or --stdin', command);
}

const set: Command = {
  name: 'secrets set',
  summary: 'create or update a secret (encrypted on this machine)',
  args: 'NAME [VALUE]',
  positionals: [1, 2],
  description:
    'Without VALUE, reads it from standard input (--stdin, all of it, for multi-line values or to keep it out of shell history) or asks for it on a terminal without echo.',
  options: {
    ...SCOPE,
    stdin: { type: 'boolean', description: 'read the value from standard input' },
    comment: {
      type: 'string',
      value: 'TEXT',
      description: 'a note stored with the secret (not encrypted)',
    },
    'expected-version': {
      type: 'string',
      value: 'N',
      description: 'fail if the current version is not N (0: must not exist)',
    },
  },
  async run({ values, positionals }) {
    const [name, given] = positionals as [string, string | undefined];
    const value = await valueArgument(given, values, `Value of ${name}: `, 'secrets set');
    const expected = str(values, 'expected-version');
    if (expected !== undefined && !/^\d+$/.test(expected))
      throw new UsageError('--expected-version must be a whole number', 'secrets set');
    const comment = str(values, 'comment');
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const secret = await setSecret(secretScope(access), access.env, name, value, {
      ...(comment !== undefined ? { comment } : {}),
      ...(expected !== undefined ? { expectedVersion: Number(expected) } : {}),
    });
    const { value: _value, ...meta } = secret;
    if (ctx.json) return printJson(meta);
    note(`Set ${secret.name} (version ${secret.version}) in ${access.env}.`);
  },
};

const remove: Command = {
  name: 'secrets delete',
  summary: 'delete a secret and its history',
  args: 'NAME',
  positionals: [1, 1],
  options: {
    ...SCOPE,
    ...YES_OPTION,
  },
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    await confirmDestructive(
      values.yes === true,
      `Delete ${positionals[0]} and all its versions from ${access.env}?`,
    );
    await deleteSecret(access.client, access.project, access.env, positionals[0]!);
    if (ctx.json) return printJson({ deleted: positionals[0] });
    note(`Deleted ${positionals[0]} from ${access.env}.`);
  },
};

const history: Command = {
  name: 'secrets history',
  summary: 'list the versions of a secret (values with --reveal)',
  args: 'NAME',
  positionals: [1, 1],
  options: {
    ...SCOPE,
    reveal: { type: 'boolean', description: 'decrypt and show each version’s value' },
  },
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const reveal = values.reveal === true;
    const name = positionals[0]!;
    const versions = reveal
      ? await secretHistory(secretScope(access), access.env, name)
      : (
          await allPages((page, per_page) =>
            listSecretVersions(access.client, access.project, access.env, name, {
              page,
              per_page,
              sort: 'version',
              order: 'desc',
            }),
          )
        ).map(({ version, created_at, created_by }) => ({ version, created_at, created_by }));
    if (ctx.json) return printJson(versions);
    printTable(
      reveal ? ['version', 'created', 'by', 'value'] : ['version', 'created', 'by'],
      versions.map((v) => [
        v.version,
        shortTime(v.created_at),
        v.created_by,
        ...('value' in v ? [String(v.value)] : []),
      ]),
    );
  },
};

const rollback: Command = {
  name: 'secrets rollback',
  summary: "make an earlier version's value current again (as a new version)",
  args: 'NAME VERSION',
  positionals: [2, 2],
  options: SCOPE,
  async run({ values, positionals }) {
    const [name, version] = positionals as [string, string];
    if (!/^\d+$/.test(version))
      throw new UsageError('VERSION must be a whole number', 'secrets rollback');
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const secret = await rollbackSecret(secretScope(access), access.env, name, Number(version));
    const { value: _value, ...meta } = secret;
    if (ctx.json) return printJson(meta);
    note(`${name} now has the value of version ${version} (as version ${secret.version}).`);
  },
};

const DIALECT_OPTION = {
  dialect: {
    type: 'string',
    value: 'READER',
    description:
      'the .env reader: node (npm dotenv), python (python-dotenv) or both (default: what both read alike)',
  },
} as const;

function dialectOf(values: Parameters<typeof str>[0], command: string): DotenvDialect | undefined {
  const dialect = str(values, 'dialect');
  if (dialect === undefined || dialect === 'both' || dialect === 'node' || dialect === 'python')
    return dialect;
  throw new UsageError('--dialect must be node, python or both', command);
}

const importCommand: Command = {
  name: 'secrets import',
  summary: 'import secrets from a .env or JSON file, all or nothing',
  args: 'FILE',
  positionals: [1, 1],
  description:
    'FILE is a .env file (KEY=value lines; quotes, escapes, `export` and comments understood; ${VAR} is kept as written, and Coffer resolves it as a reference when secrets are read, as dotenv-expand would; the import says which values hold one) or a JSON object of strings; `-` reads standard input. A .env value that npm dotenv and python-dotenv read differently is refused with its line number, unless --dialect names the reader the file was written for. Existing secrets of the same names get a new version. One request: a malformed line or an invalid name writes nothing.',
  options: {
    ...SCOPE,
    format: {
      type: 'string',
      short: 'f',
      value: 'FORMAT',
      description: 'dotenv or json (default: from the file name)',
    },
    ...DIALECT_OPTION,
  },
  async run({ values, positionals }) {
    const file = positionals[0]!;
    const format =
      str(values, 'format') ?? (file.toLowerCase().endsWith('.json') ? 'json' : 'dotenv');
    if (!(IMPORT_FORMATS as readonly string[]).includes(format))
      throw new UsageError('--format must be dotenv or json', 'secrets import');
    const dialect = dialectOf(values, 'secrets import');
    if (dialect !== undefined && format !== 'dotenv')
      throw new UsageError('--dialect applies to .env files only', 'secrets import');
    let text: string;
    try {
      text = file === '-' ? await readStdin() : readFileSync(file, 'utf8');
    } catch (err) {
      throw new CliError(
        'file_unreadable',
        `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    // Read here as the named reader does; the values travel on as JSON, which is exact.
    const read = dialect
      ? formatJson(parseDotenv(text, { dialect }).map((e) => [e.name, e.value] as const))
      : text;
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const result = await importSecrets(
      secretScope(access),
      access.env,
      read,
      dialect ? 'json' : (format as (typeof IMPORT_FORMATS)[number]),
    );
    const entries: Array<readonly [string, string]> =
      dialect || format === 'json'
        ? Object.entries(JSON.parse(read) as Record<string, string>)
        : parseDotenv(text).map((e) => [e.name, e.value] as const);
    const referring = entries.filter(([, v]) => hasReferences(v)).map(([n]) => n);
    const invalid = referring.filter((n) => {
      try {
        parseValue(entries.find(([name]) => name === n)![1], n);
        return false;
      } catch {
        return true;
      }
    });
    if (ctx.json) return printJson({ ...result, with_references: referring });
    note(
      `Imported into ${access.env}: ${result.created.length} new, ${result.updated.length} updated.`,
    );
    if (referring.length > 0) {
      note(
        `${referring.length} value${referring.length === 1 ? ' holds' : 's hold'} \${…} (${referring.slice(0, 8).join(', ')}${referring.length > 8 ? ', …' : ''}): stored as written, and resolved as references to other secrets whenever secrets are read (coffer run, secrets get, secrets export; --raw shows the text), which is what dotenv-expand does with the same file. Write $\${ for a literal \${.`,
      );
    }
    if (invalid.length > 0) {
      note(
        `coffer: warning: ${invalid.join(', ')} hold${invalid.length === 1 ? 's' : ''} a \${…} that is not a reference (\${KEY}, \${ENV.KEY} or \${PROJECT/ENV.KEY}): reading ${invalid.length === 1 ? 'it' : 'them'} resolved will fail until the value is fixed or written with $\${.`,
      );
    }
  },
};

const exportCommand: Command = {
  name: 'secrets export',
  summary:
    'print every secret of an environment, decrypted: dotenv, JSON, YAML, shell, GitHub Actions or a Kubernetes Secret',
  description: [
    'Writes to standard output only: redirecting it to a file puts plaintext on disk, which `coffer run` avoids. Values are resolved (${…} references replaced by what they refer to) and, with your login, your personal overrides applied, as `coffer run` would pass them; --raw writes the text as stored and --no-overrides the team values. dotenv quotes each value so that npm dotenv and python-dotenv both read it back exactly; a value no quoting serves (e.g. ${VAR}, which python-dotenv expands) fails the export, naming the secret, unless --dialect names the one reader that loads the file.',
    '',
    '--format github writes what GitHub Actions reads from $GITHUB_ENV on standard output (NAME=value, or NAME<<DELIMITER … DELIMITER with a random delimiter for a multi-line value), and `::add-mask::` commands for every line of every value on standard error (the runner reads workflow commands there too, and hides those values in the log from then on), or into --mask-file FILE instead. So `coffer secrets export --format github >> "$GITHUB_ENV"` puts only the variables in the file and the masks in the log.',
    '',
    '--format k8s --name NAME writes a Kubernetes Secret manifest (v1, type Opaque, base64 data) for `kubectl apply -f -`.',
    '',
    '--output FILE writes FILE instead (mode 0600, atomically: a temporary file in the same directory, renamed over FILE). With --watch, coffer keeps running and rewrites FILE whenever the secrets change (for a sidecar or a container that reads its configuration from a file); --on-change runs a command after each rewrite (e.g. to tell the application to reload). If the server is unreachable the file keeps its last values while coffer reconnects.',
  ].join('\n'),
  options: {
    ...SCOPE,
    format: {
      type: 'string',
      short: 'f',
      value: 'FORMAT',
      description: 'dotenv (default), json, yaml, shell, github or k8s',
    },
    ...DIALECT_OPTION,
    ...READ_OPTIONS,
    'mask-file': {
      type: 'string',
      value: 'FILE',
      description: 'github: write the ::add-mask:: commands to FILE (mode 0600) instead of stderr',
    },
    name: {
      type: 'string',
      value: 'NAME',
      description: "k8s: the Secret's metadata.name (a DNS-1123 subdomain)",
    },
    namespace: {
      type: 'string',
      value: 'NS',
      description: "k8s: the Secret's metadata.namespace (default: kubectl's)",
    },
    ...EXPORT_WATCH_OPTIONS,
  },
  async run({ values }) {
    const command = 'secrets export';
    const format = str(values, 'format') ?? 'dotenv';
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
      throw new UsageError('--format must be dotenv, json, yaml, shell, github or k8s', command);
    }
    const dialect = dialectOf(values, command);
    if (dialect !== undefined && format !== 'dotenv')
      throw new UsageError('--dialect applies to --format dotenv only', command);
    const maskFile = str(values, 'mask-file');
    if (maskFile !== undefined && format !== 'github')
      throw new UsageError('--mask-file applies to --format github only', command);
    const name = str(values, 'name');
    const namespace = str(values, 'namespace');
    if (format !== 'k8s' && (name !== undefined || namespace !== undefined))
      throw new UsageError('--name and --namespace apply to --format k8s only', command);
    if (format === 'k8s') {
      if (name === undefined) throw new UsageError('--format k8s needs --name NAME', command);
      if (!isDns1123Subdomain(name))
        throw new UsageError(
          `--name "${name}" is not a Kubernetes name: lower-case letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters`,
          command,
        );
      if (namespace !== undefined && !isDns1123Label(namespace))
        throw new UsageError(
          `--namespace "${namespace}" is not a Kubernetes namespace: lower-case letters, digits and "-", starting and ending with a letter or digit, at most 63 characters`,
          command,
        );
    }
    const options = {
      ...(dialect ? { dialect } : {}),
      ...(name !== undefined ? { name } : {}),
      ...(namespace !== undefined ? { namespace } : {}),
    };
    const unwritable = (err: unknown) => {
      if (!(err instanceof UnwritableValueError)) return err;
      // Nothing was written: a partial file would silently lack the secret.
      const instead =
        format === 'dotenv'
          ? `use --format json or --format shell${dialect && dialect !== 'both' ? '' : ', or --dialect node|python if only that reader loads the file'}`
          : format === 'github' || format === 'k8s'
            ? 'no environment variable can hold it'
            : 'use --format json or --format yaml';
      return new CliError('unwritable_value', `${err.message}; ${instead}`);
    };
    if (format === 'github' && str(values, 'output') !== undefined)
      throw new UsageError(
        '--format github writes to standard output (and masks to stderr); leave out --output',
        command,
      );
    const render = (secrets: Record<string, string>) => {
      try {
        return formatSecrets(secrets, format as (typeof EXPORT_FORMATS)[number], options);
      } catch (err) {
        throw unwritable(err);
      }
    };
    const toFile = exportToFileCommand(values, render, async () => {
      const ctx = new Context(values);
      const access = await environmentAccess(ctx);
      try {
        return render(
          await listSecrets(secretScope(access), access.env, readOptions(ctx, access, values)),
        );
      } finally {
        access.vault.then((v) => v.forget()).catch(() => undefined);
      }
    });
    if (toFile) return toFile;

    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    let text: string;
    let masks: string | undefined;
    try {
      if (format === 'github') {
        // One fetch for both parts; nothing is written unless both can be.
        const secrets = await listSecrets(
          secretScope(access),
          access.env,
          readOptions(ctx, access, values),
        );
        masks = formatGithubMasks(secrets);
        text = formatGithubEnv(secrets);
      } else {
        text = await exportSecrets(
          secretScope(access),
          access.env,
          format as (typeof EXPORT_FORMATS)[number],
          { ...options, ...readOptions(ctx, access, values) },
        );
      }
    } catch (err) {
      throw unwritable(err);
    }
    if (masks !== undefined) {
      // The masks first: the runner hides the values before anything could print them.
      if (maskFile === undefined) process.stderr.write(masks);
      else {
        try {
          writeFileSync(maskFile, masks, { mode: 0o600 });
        } catch (err) {
          throw new CliError(
            'file_unwritable',
            `cannot write ${maskFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
          );
        }
      }
    }
    process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
  },
};

/**
 * A value on one line, its differences visible: JSON quoting shows spaces at
 * the ends and line breaks; no-break spaces, combining accents and format
 * characters, which print as nothing or like another character, become `\u{…}`.
 */
const visible = (value: string) =>
  JSON.stringify(value).replace(/[\p{Z}\p{Cf}\p{M}\u007f-\u009f]/gu, (c) =>
    c === ' ' ? c : `\\u{${c.codePointAt(0)!.toString(16).padStart(4, '0')}}`,
  );

/**
 * The server's 404 for a listing does not say which of the two environments
 * it could not find; asking for each one names it.
 */
async function unknownEnvironment(
  err: unknown,
  client: CofferClient,
  project: string,
  envs: string[],
): Promise<CliError | undefined> {
  if (!isCofferApiError(err, 'not_found')) return undefined;
  for (const env of envs) {
    const found = await getEnvironment(client, project, env).then(
      () => true,
      (lookup: unknown) => (isCofferApiError(lookup, 'not_found') ? false : true),
    );
    if (!found) return new CliError('not_found', `no environment "${env}" in this project`);
  }
  return undefined;
}

const diff: Command = {
  name: 'secrets diff',
  summary: 'compare two environments: names missing on either side and values that differ',
  args: 'ENV_A ENV_B',
  positionals: [2, 2],
  description:
    'Prints `- NAME` for a secret only in ENV_A, `+ NAME` for one only in ENV_B and `~ NAME` for one both hold with different values (compared exactly: a trailing space or another Unicode normalisation differs). Values are decrypted on this machine and shown only with --values. Exits 0 whether or not they differ, unless --exit-code.',
  options: {
    ...PROJECT_OPTION,
    values: {
      type: 'boolean',
      description: 'show both values of each differing secret (with --json: every value of both)',
    },
    'exit-code': { type: 'boolean', description: 'exit 1 when the environments differ' },
  },
  async run({ values, positionals }) {
    const [envA, envB] = positionals as [string, string];
    const ctx = new Context(values);
    // Both environments come from the arguments, so --env and .coffer.json's do not apply.
    const client = await ctx.client();
    const project = await currentProjectId(ctx, client);
    const vault = openProjectVault(ctx, client, project);
    vault.catch(() => undefined); // awaited through the scope; never an unhandled rejection
    const scope = secretScope({ client, project, env: envA, vault });
    const result = await compareEnvironments(scope, envA, envB).catch(async (err: unknown) => {
      throw (await unknownEnvironment(err, client, project, [envA, envB])) ?? err;
    });
    const { a, b, ...names } = result;
    const differences = names.onlyInA.length + names.onlyInB.length + names.differing.length;
    const exitCode = values['exit-code'] === true && differences > 0 ? 1 : 0;
    const reveal = values.values === true;
    if (ctx.json) {
      printJson(reveal ? result : names);
      return exitCode;
    }
    const width = Math.max(
      0,
      ...[...names.onlyInA, ...names.onlyInB, ...names.differing].map((n) => n.length),
    );
    for (const name of names.onlyInA) printLine(`- ${name.padEnd(width)}  only in ${envA}`);
    for (const name of names.onlyInB) printLine(`+ ${name.padEnd(width)}  only in ${envB}`);
    const label = (env: string) => `${env}:`.padEnd(Math.max(envA.length, envB.length) + 1);
    for (const name of names.differing) {
      printLine(`~ ${name.padEnd(width)}  differs`);
      if (!reveal) continue;
      printLine(`    ${label(envA)}  ${visible(a[name]!)}`);
      printLine(`    ${label(envB)}  ${visible(b[name]!)}`);
    }
    note(
      differences === 0
        ? `No differences between ${envA} and ${envB} (${names.same.length} secrets the same).`
        : `${envA} → ${envB}: ${names.onlyInA.length} only in ${envA}, ${names.onlyInB.length} only in ${envB}, ${names.differing.length} differing, ${names.same.length} the same.`,
    );
    return exitCode;
  },
};

/** Your override key and the environment, for the override commands (a user login only). */
async function overrideAccess(values: Parameters<typeof str>[0]) {
  const ctx = new Context(values);
  if (ctx.token) {
    throw new CliError(
      'user_session_required',
      'personal overrides belong to a signed-in member; tokens never have any. Unset COFFER_TOKEN and run `coffer login`',
    );
  }
  const access = await environmentAccess(ctx);
  const owner = await (await access.vault).overrideKey();
  if (!owner) throw new CliError('user_session_required', 'personal overrides need a user login');
  return { ctx, access, owner };
}

const overrideSet: Command = {
  name: 'secrets override set',
  summary: 'set your own value for a name in an environment (only you can read it)',
  args: 'NAME [VALUE]',
  positionals: [1, 2],
  description:
    'Your value replaces the team value of NAME whenever you read this environment (coffer run, secrets get, secrets export; --no-overrides leaves it out), and nobody else’s. It is encrypted on this machine under a key derived from your own private key: no other member, admin or token can read it, nor can the server. Without VALUE, reads it from standard input (--stdin) or asks for it without echo. NAME need not exist in the environment.',
  options: {
    ...SCOPE,
    stdin: { type: 'boolean', description: 'read the value from standard input' },
  },
  async run({ values, positionals }) {
    const [name, given] = positionals as [string, string | undefined];
    const value = await valueArgument(
      given,
      values,
      `Your value of ${name}: `,
      'secrets override set',
    );
    const { ctx, access, owner } = await overrideAccess(values);
    const override = await setOverride(
      access.client,
      access.project,
      access.env,
      name,
      value,
      owner,
    );
    const { value: _value, ...meta } = override;
    if (ctx.json) return printJson(meta);
    note(`Your override of ${name} in ${access.env} is set; only you see it.`);
  },
};

const overrideUnset: Command = {
  name: 'secrets override unset',
  summary: 'remove your own value for a name: the team value applies again',
  args: 'NAME',
  positionals: [1, 1],
  options: SCOPE,
  async run({ values, positionals }) {
    const name = positionals[0]!;
    const { ctx, access } = await overrideAccess(values);
    await deleteOverride(access.client, access.project, access.env, name);
    if (ctx.json) return printJson({ removed: name });
    note(`Removed your override of ${name} in ${access.env}.`);
  },
};

const overrideList: Command = {
  name: 'secrets override list',
  summary: 'list your personal overrides (values with --reveal), or a member’s names (admins)',
  description:
    'Without --member: your overrides in the environment (--all-environments: in every one). With --member EMAIL|ID (admins): the names that member overrides, in every environment; never a value, which only its owner can read.',
  options: {
    ...SCOPE,
    reveal: { type: 'boolean', description: 'decrypt and show your values' },
    'all-environments': { type: 'boolean', description: 'yours in every environment' },
    member: { type: 'string', value: 'MEMBER', description: 'a member’s override names (admins)' },
  },
  async run({ values }) {
    const memberRef = str(values, 'member');
    if (memberRef !== undefined) {
      if (values.reveal === true)
        throw new UsageError(
          "--reveal shows your own values only: nobody can read another member's",
          'secrets override list',
        );
      const ctx = new Context(values);
      const client = await ctx.client();
      const project = await currentProjectId(ctx, client);
      const member = await findMember(client, project, memberRef);
      const names = await allPages((page, per_page) =>
        listMemberOverrides(client, project, member.id, {
          page,
          per_page,
          sort: 'name',
          order: 'asc',
        }),
      );
      if (ctx.json) return printJson(names);
      printTable(
        ['environment', 'name', 'updated'],
        names.map((n) => [n.environment_slug, n.name, shortTime(n.updated_at)]),
      );
      return;
    }
    const { ctx, access, owner } = await overrideAccess(values);
    const all = await readOverrides(access.client, access.project, owner);
    const environments = values['all-environments'] === true ? [...all.keys()] : [access.env];
    const envs = await allEnvironments(access.client, access.project);
    const slugOf = (id: string) => envs.find((e) => e.id === id)?.slug ?? id;
    const idOf = (ref: string) => envs.find((e) => e.id === ref || e.slug === ref)?.id ?? ref;
    const rows = environments.flatMap((env) =>
      Object.entries(all.get(idOf(env)) ?? {}).map(([name, value]) => ({
        environment: slugOf(idOf(env)),
        name,
        ...(values.reveal === true ? { value } : {}),
      })),
    );
    if (ctx.json) return printJson(rows);
    printTable(
      values.reveal === true ? ['environment', 'name', 'value'] : ['environment', 'name'],
      rows.map((r) => [r.environment, r.name, ...('value' in r ? [visible(r.value!)] : [])]),
    );
  },
};

export const commands: Command[] = [
  list,
  get,
  set,
  remove,
  history,
  rollback,
  importCommand,
  exportCommand,
  diff,
  overrideSet,
  overrideUnset,
  overrideList,
];
