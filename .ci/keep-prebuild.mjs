// Keeps the better-sqlite3 addon that `npm ci` just built where its installer,
// prebuild-install, looks before it downloads or compiles: npm's prebuild cache
// (~/.npm/_prebuilds), under the name of the release asset for this package
// version, Node ABI, platform and architecture. The next `npm ci` on this machine
// unpacks it, checks that it loads, and skips the native build (about 70 s of CI);
// on a machine without it, `npm ci` builds from source as before. Only this
// run's own build is kept: nothing is downloaded.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const pkgDir = resolve('node_modules/better-sqlite3');
const addon = join(pkgDir, 'build/Release/better_sqlite3.node');
if (!existsSync(addon)) process.exit(0);
const fromPackage = createRequire(join(pkgDir, 'package.json'));
const pkg = fromPackage('./package.json');
const options = { ...fromPackage('prebuild-install/rc')(pkg), pkg };
const util = fromPackage('prebuild-install/util');
const cached = util.cachedPrebuild(util.getDownloadUrl(options));
if (existsSync(cached)) process.exit(0);

mkdirSync(dirname(cached), { recursive: true });
const partial = `${cached}.${process.pid}.partial`;
execFileSync('tar', ['-czf', partial, '-C', pkgDir, 'build/Release/better_sqlite3.node']);
renameSync(partial, cached);
process.stdout.write(`ci: kept this run's better-sqlite3 build for the next npm ci (${cached})\n`);
