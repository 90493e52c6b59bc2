import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { CliError } from '../cli/errors.js';

/** Signals a process manager or terminal may send that the child must see. */
export const FORWARDED: NodeJS.Signals[] = [
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGWINCH',
];

/**
 * Runs the child with the given environment, stdio inherited, and resolves with
 * the exit code `coffer run` must exit with: the child's own, or 128 + the
 * signal number when a signal ended it (the shell convention).
 *
 * Every signal in FORWARDED that reaches `coffer` is passed on to the child,
 * and `coffer` itself keeps running until the child exits. (A Ctrl-C at a
 * terminal reaches both, since they share the foreground process group, so the
 * child sees SIGINT twice, as with `npm run`; the alternative, a separate
 * process group, would cut the child off from the terminal.)
 */
export function runChild(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', env });
    const handlers = FORWARDED.map((signal) => {
      const handler = () => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      };
      process.on(signal, handler);
      return [signal, handler] as const;
    });
    const cleanup = () => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      reject(spawnFailure(err, command));
    });
    child.once('exit', (code, signal) => {
      cleanup();
      resolve(signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1));
    });
  });
}

/** Why the child could not start, as the CLI reports it (127: not found, 126: not executable). */
export function spawnFailure(err: NodeJS.ErrnoException, command: string): Error {
  if (err.code === 'ENOENT')
    return new CliError('command_not_found', `command not found: ${command}`, 127);
  if (err.code === 'EACCES')
    return new CliError('command_not_executable', `permission denied: ${command}`, 126);
  return err;
}
