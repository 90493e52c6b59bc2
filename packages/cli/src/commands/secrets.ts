import { readFileSync } from 'node:fs';
import {
  deleteSecret,
  exportSecrets,
  getSecret,
  history as secretHistory,
  importSecrets,
  listSecretEnvelopes,
  listSecretVersions,
  rollback as rollbackSecret,
  setSecret,
} from '@coffer/sdk';
import { ENV_OPTION, PROJECT_OPTION, str, YES_OPTION, type Command } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson, printTable, shortTime } from '../cli/output.js';
import { ask, confirmDestructive, interactive, readStdin } from '../cli/prompt.js';
import { Context } from '../context.js';
import { allPages } from '../resolve.js';
import { environmentAccess, secretScope } from '../secrets-source.js';

const SCOPE = { ...PROJECT_OPTION, ...ENV_OPTION };
const EXPORT_FORMATS = ['dotenv', 'json', 'yaml', 'shell'] as const;
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
  options: SCOPE,
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const secret = await getSecret(secretScope(access), access.env, positionals[0]!);
    if (ctx.json) return printJson(secret);
    process.stdout.write(`${secret.value}\n`);
  },
};

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
    let value: string;
    if (given !== undefined) value = given;
    else if (values.stdin === true) value = (await readStdin()).replace(/\r?\n$/, '');
    else if (interactive()) value = await ask(`Value of ${name}: `, { hidden: true });
    else throw new UsageError('missing VALUE: pass it, or --stdin', 'secrets set');
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

const importCommand: Command = {
  name: 'secrets import',
  summary: 'import secrets from a .env or JSON file, all or nothing',
  args: 'FILE',
  positionals: [1, 1],
  description:
    'FILE is a .env file (KEY=value lines; quotes, escapes, `export` and comments understood; ${VAR} is NOT expanded) or a JSON object of strings; `-` reads standard input. Existing secrets of the same names get a new version. One request: a malformed line or an invalid name writes nothing.',
  options: {
    ...SCOPE,
    format: {
      type: 'string',
      short: 'f',
      value: 'FORMAT',
      description: 'dotenv or json (default: from the file name)',
    },
  },
  async run({ values, positionals }) {
    const file = positionals[0]!;
    const format =
      str(values, 'format') ?? (file.toLowerCase().endsWith('.json') ? 'json' : 'dotenv');
    if (!(IMPORT_FORMATS as readonly string[]).includes(format))
      throw new UsageError('--format must be dotenv or json', 'secrets import');
    let text: string;
    try {
      text = file === '-' ? await readStdin() : readFileSync(file, 'utf8');
    } catch (err) {
      throw new CliError(
        'file_unreadable',
        `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const result = await importSecrets(
      secretScope(access),
      access.env,
      text,
      format as (typeof IMPORT_FORMATS)[number],
    );
    if (ctx.json) return printJson(result);
    note(
      `Imported into ${access.env}: ${result.created.length} new, ${result.updated.length} updated.`,
    );
  },
};

const exportCommand: Command = {
  name: 'secrets export',
  summary: 'print every secret of an environment, decrypted, as dotenv, JSON, YAML or shell',
  description:
    'Writes to standard output only: redirecting it to a file puts plaintext on disk, which `coffer run` avoids.',
  options: {
    ...SCOPE,
    format: {
      type: 'string',
      short: 'f',
      value: 'FORMAT',
      description: 'dotenv (default), json, yaml or shell',
    },
  },
  async run({ values }) {
    const format = str(values, 'format') ?? 'dotenv';
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
      throw new UsageError('--format must be dotenv, json, yaml or shell', 'secrets export');
    }
    const ctx = new Context(values);
    const access = await environmentAccess(ctx);
    const text = await exportSecrets(
      secretScope(access),
      access.env,
      format as (typeof EXPORT_FORMATS)[number],
    );
    process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
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
];
