// Runs every test file with node's test runner (TypeScript through tsx, workspace
// packages from source). Extra arguments narrow the run: `npm test -- members`
// runs the files whose path contains "members"; `npm test -- '!packages/web/'`
// leaves out those whose path contains "packages/web/".
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const filters = args.filter((a) => !a.startsWith('!'));
const excluded = args.filter((a) => a.startsWith('!')).map((a) => a.slice(1));

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...find(path));
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

const files = find(join(root, 'packages'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => !excluded.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const concurrency = process.env.TEST_CONCURRENCY ?? '3';
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--conditions=development',
    '--test',
    `--test-concurrency=${concurrency}`,
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
