import { parseArgs } from 'node:util';
import { UsageError } from './errors.js';

/** One option of a command, in `node:util` `parseArgs` terms plus the words `--help` prints. */
interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Placeholder in help, e.g. `FILE`. */
  value?: string;
  description: string;
}

export type Options = Record<string, OptionSpec>;
export type Values = Record<string, string | boolean | string[] | undefined>;

interface CommandInput {
  values: Values;
  positionals: string[];
  /** For `run`: the child command after `--`. */
  rest: string[];
}

export interface Command {
  /** e.g. `secrets set` */
  name: string;
  summary: string;
  /** Arguments after the command name, e.g. `NAME [VALUE]`. */
  args?: string;
  description?: string;
  options?: Options;
  /** Inclusive bounds on the positional arguments. */
  positionals?: [min: number, max: number];
  run(input: CommandInput): Promise<number | void>;
}

/** Options every command accepts. */
const GLOBAL_OPTIONS: Options = {
  server: {
    type: 'string',
    value: 'URL',
    description: 'Coffer server (default: $COFFER_SERVER, .coffer.json, your login)',
  },
  ca: {
    type: 'string',
    value: 'FILE',
    description: 'trust this PEM certificate (default: $COFFER_CA_FILE)',
  },
  json: { type: 'boolean', description: 'machine-readable output on stdout' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
};

/** `--project` / `--env`, for commands that work inside one project (or environment). */
export const PROJECT_OPTION: Options = {
  project: {
    type: 'string',
    short: 'p',
    value: 'PROJECT',
    description: 'project id or name (default: .coffer.json)',
  },
};
export const ENV_OPTION: Options = {
  env: {
    type: 'string',
    short: 'e',
    value: 'ENV',
    description: 'environment slug or id (default: .coffer.json)',
  },
};

/** `--yes`, for operations that cannot be undone (asked on a terminal, required without one). */
export const YES_OPTION: Options = {
  yes: {
    type: 'boolean',
    short: 'y',
    description: 'do not ask for confirmation (needed without a terminal)',
  },
};

/**
 * Parses a command's arguments. Unknown options and wrong argument counts are
 * usage errors (exit 2). With `splitRest`, everything from `--` (or the first
 * positional) on is returned untouched as `rest`: the child command of `run`.
 */
export function parseCommand(command: Command, argv: string[], splitRest = false): CommandInput {
  const options = { ...GLOBAL_OPTIONS, ...command.options };
  let own = argv;
  let rest: string[] = [];
  if (splitRest) {
    const at = restStart(argv, options);
    own = argv.slice(0, at);
    rest = argv[at] === '--' ? argv.slice(at + 1) : argv.slice(at);
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: own,
      options: Object.fromEntries(
        Object.entries(options).map(([name, o]) => [
          name,
          {
            type: o.type,
            ...(o.short ? { short: o.short } : {}),
            ...(o.multiple ? { multiple: true } : {}),
          },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(parseErrorMessage(err), command.name);
  }
  const values = parsed.values as Values;
  if (values.help) return { values, positionals: parsed.positionals, rest };
  const [min, max] = command.positionals ?? [0, 0];
  const count = parsed.positionals.length;
  if (count < min)
    throw new UsageError(`missing argument: ${command.args ?? ''}`.trim(), command.name);
  if (count > max) {
    throw new UsageError(`unexpected argument "${parsed.positionals[max]}"`, command.name);
  }
  return { values, positionals: parsed.positionals, rest };
}

/** Index where the child command starts: at `--`, else at the first non-option word. */
function restStart(argv: string[], options: Options): number {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--' || !arg.startsWith('-') || arg === '-') return i;
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    const spec = name
      ? options[name]
      : Object.values(options).find((o) => o.short === arg.slice(1));
    if (spec?.type === 'string' && !arg.includes('=')) i++;
  }
  return argv.length;
}

/** node's messages are long and mention `parseArgs`; keep the useful part. */
function parseErrorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /Option '([^']+)' argument missing/.exec(message);
  if (missing) return `option ${missing[1]} needs a value`;
  const unexpected = /Option '([^']+)' does not take an argument/.exec(message);
  if (unexpected) return `option ${unexpected[1]} does not take a value`;
  return message.split('\n')[0]!;
}

/** The `--help` text of one command. */
export function commandHelp(command: Command): string {
  const lines = [
    `Usage: coffer ${command.name}${command.args ? ` ${command.args}` : ''} [options]`,
    '',
  ];
  lines.push(command.summary);
  if (command.description) lines.push('', command.description);
  const own = Object.entries(command.options ?? {});
  if (own.length > 0) lines.push('', 'Options:', ...optionLines(own));
  lines.push('', 'Global options:', ...optionLines(Object.entries(GLOBAL_OPTIONS)));
  return lines.join('\n') + '\n';
}

function optionLines(entries: [string, OptionSpec][]): string[] {
  const rows = entries.map(([name, o]) => [
    `${o.short ? `-${o.short}, ` : '    '}--${name}${o.value ? ` ${o.value}` : ''}`,
    o.description + (o.multiple ? ' (repeatable)' : ''),
  ]);
  const width = Math.max(...rows.map(([left]) => left!.length));
  return rows.map(([left, right]) => `  ${left!.padEnd(width)}  ${right}`);
}

/** The string value of an option, if given. */
export const str = (values: Values, name: string): string | undefined => {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
};
export const list = (values: Values, name: string): string[] => {
  const v = values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
};
