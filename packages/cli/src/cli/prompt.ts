import { createInterface } from 'node:readline';
import { CliError } from './errors.js';

/** Prompts only when a human is at both ends: input from and prompts to a terminal. */
export const interactive = (): boolean => Boolean(process.stdin.isTTY && process.stderr.isTTY);

/** Asks one question on stderr; `hidden` echoes nothing (passwords). */
export async function ask(question: string, options: { hidden?: boolean } = {}): Promise<string> {
  if (!interactive()) {
    throw new CliError(
      'not_interactive',
      `cannot ask "${question.trim()}" without a terminal; pass it as an option`,
    );
  }
  if (options.hidden) return askHidden(question);
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.once('SIGINT', () => reject(new CliError('cancelled', 'cancelled')));
      rl.question(question, resolve);
    });
  } finally {
    rl.close();
  }
}

/**
 * Raw-mode input without echo; Ctrl-C cancels, backspace edits. Echo is off
 * before the prompt is shown, so nothing typed after it can be echoed.
 */
function askHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  stdin.setRawMode(true);
  process.stderr.write(question);
  return new Promise<string>((resolve, reject) => {
    let answer = '';
    const finish = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(answer);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new CliError('cancelled', 'cancelled'));
        if (ch === '\u0004') return finish();
        if (ch === '\u007f' || ch === '\b') answer = [...answer].slice(0, -1).join('');
        else if (ch >= ' ') answer += ch;
      }
    };
    stdin.resume();
    stdin.on('data', onData);
  });
}

/** A yes/no question; anything but y/yes is no. */
export async function confirm(question: string): Promise<boolean> {
  const answer = await ask(`${question} [y/N] `);
  return /^y(es)?$/i.test(answer.trim());
}

/** All of stdin as text (for `--password-stdin`, `secrets set NAME --stdin`, `import -`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A password from stdin: the first line, without its line ending. */
export async function readPasswordFromStdin(): Promise<string> {
  const text = await readStdin();
  const password = text.split(/\r?\n/)[0] ?? '';
  if (password === '') throw new CliError('validation_error', 'no password on standard input');
  return password;
}

/** Irreversible operations ask on a terminal and need `--yes` without one. */
export async function confirmDestructive(yes: boolean, question: string): Promise<void> {
  if (yes) return;
  if (!interactive()) {
    throw new CliError('confirmation_required', 'this cannot be undone: pass --yes to confirm');
  }
  if (!(await confirm(question))) throw new CliError('cancelled', 'cancelled');
}
