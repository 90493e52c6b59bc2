import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The flags `npm start` gives `node` (the root package.json's `start`), so the
 * benchmark and the tests that run the server as an operator does never differ
 * from it. `root` is the checkout's root directory.
 */
export function serverNodeFlags(root: string): string[] {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const match = /\bnode((?: --\S+)*) packages\/server\/dist\/main\.js\b/.exec(scripts.start);
  if (!match) throw new Error(`cannot find the server's node flags in "start": ${scripts.start}`);
  return match[1]!.trim().split(' ').filter(Boolean);
}
