import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  createApiKey,
  createProjectWithVault,
  decryptSecretValue,
  fromCredential,
  listSecretEnvelopes,
  listSecrets,
  openVault,
  rekey,
  resolveReferences,
  type RekeyPhase,
} from '@coffer/sdk';
import { median, timeRuns } from '../lib/measure.js';
import { findProfile, renderProfiles, summariseProfile, WHOLE_RUN } from '../lib/profile.js';
import type { BenchOptions } from '../lib/options.js';
import { targets, type ValueRow } from '../lib/report.js';
import { SCAN_SCENARIOS } from './scan.js';
import {
  READ_ENV,
  SECRET_COUNT,
  environmentsOf,
  sampleValue,
  secretName,
  trustingFetch,
  writeSecrets,
  type Fixture,
} from './fixture.js';

export interface ClientContext {
  fixture: Fixture;
  baseUrl: string;
  caFile: string;
  root: string;
  workDir: string;
  options: BenchOptions;
  say: (text: string) => void;
  /** Adds a block to the report printed after the tables (profiles). */
  report: (text: string) => void;
}

/** Client-side measurements (SDK and CLI against the running server). */
export interface ClientScenario {
  id: string;
  title: string;
  run(ctx: ClientContext): Promise<Omit<ValueRow, 'id' | 'backend'> | null>;
}

/** Fetching and decrypting one environment through the SDK, as an application does at start. */
function sdkScope(ctx: ClientContext) {
  return fromCredential(ctx.baseUrl, ctx.fixture.apiKeyCredential, {
    fetch: trustingFetch(ctx.caFile),
  });
}

const sdkList: ClientScenario = {
  id: 'sdk-list',
  title: `SDK: listSecrets, ${SECRET_COUNT} secrets (fetch + decrypt)`,
  async run(ctx) {
    const { client, vault, projectId } = await sdkScope(ctx);
    const scope = { client, projectId, keys: vault };
    const durations = await timeRuns(ctx.options.quick ? 10 : 50, 5, () =>
      listSecrets(scope, READ_ENV),
    );
    return valueRow(this.title, durations, 'in-process, warm connection', null);
  },
};

/** The crypto alone: the 100 envelopes of a listing, decrypted with the API key's environment key. */
const sdkDecrypt: ClientScenario = {
  id: 'sdk-decrypt',
  title: `SDK: decrypt ${SECRET_COUNT} secrets (crypto only)`,
  async run(ctx) {
    const { client, vault, projectId } = await sdkScope(ctx);
    const page = await listSecretEnvelopes(client, projectId, READ_ENV, {
      per_page: SECRET_COUNT,
    });
    const environmentId = page.data[0]!.environment_id;
    const { key, epoch } = await vault.environmentKey(environmentId);
    const decryptAll = async () =>
      page.data.map((s) =>
        decryptSecretValue({
          projectId,
          environmentId,
          name: s.name,
          epoch,
          environmentKey: key,
          envelope: s.value!,
        }),
      );
    const durations = await timeRuns(ctx.options.quick ? 20 : 200, 20, decryptAll);
    return valueRow(this.title, durations, '', null);
  },
};

function valueRow(
  title: string,
  durations: number[],
  how: string,
  target: ValueRow['target'],
): Omit<ValueRow, 'id' | 'backend'> {
  const spread = `median of ${durations.length}, min ${Math.min(...durations).toFixed(1)}, max ${Math.max(...durations).toFixed(1)}`;
  return {
    kind: 'value',
    title,
    value: median(durations),
    unit: 'ms',
    detail: how ? `${spread}; ${how}` : spread,
    target,
    pass: null,
  };
}

/** The CLI as a user runs it: a fresh process that fetches, decrypts and execs `true`. */
const cliRun: ClientScenario = {
  id: 'coffer-run',
  title: `coffer run -- true (${SECRET_COUNT} secrets)`,
  async run(ctx) {
    const cli = join(ctx.root, 'packages/cli/dist/coffer.js');
    if (!existsSync(cli)) return null;
    const cwd = mkdtempSync(join(ctx.workDir, 'cli-'));
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: cwd,
      COFFER_SERVER: ctx.baseUrl,
      COFFER_TOKEN: ctx.fixture.apiKeyCredential,
      COFFER_CA_FILE: ctx.caFile,
    };
    const args = [cli, 'run', '--env', READ_ENV, '--', 'true'];
    const runOnce = () => promisify(execFile)(process.execPath, args, { cwd, env });
    const durations = await timeRuns(ctx.options.cliRuns, 2, runOnce);
    // What any Node CLI pays before its first line runs, for comparison.
    const floor = median(
      await timeRuns(ctx.options.cliRuns, 2, () =>
        promisify(execFile)(process.execPath, ['-e', ''], { cwd, env }),
      ),
    );
    if (ctx.options.profile) {
      const dir = mkdtempSync(join(ctx.workDir, 'cli-profile-'));
      await promisify(execFile)(
        process.execPath,
        ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...args],
        {
          cwd,
          env,
        },
      );
      const file = findProfile(dir, join(ctx.root, 'bench/results/coffer-run.cpuprofile'));
      if (file) ctx.report(renderProfiles('coffer run', summariseProfile(file, [WHOLE_RUN])));
    }
    return valueRow(
      this.title,
      durations,
      `fresh process each; \`node -e ''\` alone: ${floor.toFixed(0)} ms`,
      targets.run,
    );
  },
};

/**
 * Re-key of a project holding `versions` secret versions (10 versions of each
 * secret), client and server together: snapshot, re-encryption, grants, commit.
 */
function rekeyScenario(versions: number): ClientScenario {
  const label = versions.toLocaleString('en-US');
  return {
    id: `rekey-${versions / 1000}k`,
    title: `re-key ${label} secret versions`,
    async run(ctx) {
      const { client, admin } = ctx.fixture;
      const started = performance.now();
      const project = await createProjectWithVault(client, admin.keys, {
        name: `bench re-key ${label}`,
      });
      const vault = await openVault(client, project.id, admin.keys);
      const env = (await environmentsOf(client, project.id)).get(READ_ENV)!;
      // A token with a grant, which the re-key must grant again.
      await createApiKey(vault, { name: 'app', role: 'developer', scopes: { [READ_ENV]: 'read' } });
      for (let round = 0; round < 10; round++)
        await writeSecrets(vault, env, versions / 10, secretName);
      ctx.say(
        `  setup: project with ${label} versions (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );

      const runs = ctx.options.quick ? 1 : 3;
      const totals: number[] = [];
      let phases: Record<string, number> = {};
      for (let i = 0; i < runs; i++) {
        const at: Partial<Record<RekeyPhase, number>> = {};
        const start = performance.now();
        await rekey(client, project.id, admin.keys, {
          onProgress: (p) => (at[p.phase] ??= performance.now()),
        });
        const end = performance.now();
        totals.push((end - start) / 1000);
        // Where the time went in the last run: until the snapshot arrived and the
        // re-encryption began, client crypto, and the commit request.
        phases = {
          'open + snapshot': (at.reencrypt ?? start) - start,
          'client crypto': (at.commit ?? end) - (at.reencrypt ?? start),
          commit: end - (at.commit ?? end),
        };
      }
      return {
        kind: 'value',
        title: this.title,
        value: median(totals),
        unit: 's',
        detail: `median of ${runs}; last: ${Object.entries(phases)
          .map(([phase, t]) => `${phase} ${(t / 1000).toFixed(2)} s`)
          .join(', ')}`,
        target: versions === 10_000 ? targets.rekey10k : null,
        pass: null,
      };
    },
  };
}

/** Of the 100 secrets of the references run, 30 carry references: 25 within the environment, 5 to staging. */
const REFERRING = 30;
const CROSS_ENVIRONMENT = 5;
const referringValue = (i: number): string => {
  if (i >= REFERRING) return sampleValue(i);
  const target =
    i < CROSS_ENVIRONMENT ? `\${staging.SHARED_${i}}` : `\${${secretName(REFERRING + i)}}`;
  return `prefix-${target}-${sampleValue(i).slice(0, 24)}`;
};

/**
 * `coffer run` over 100 secrets of which 30 carry references (5 of them into
 * another environment, which costs one more listing), against the same run
 * over 100 secrets without any: two projects of the same shape, their runs
 * interleaved so both see the same machine. Reported as the ratio of the medians.
 */
const cliRunReferences: ClientScenario = {
  id: 'coffer-run-references',
  title: `coffer run, ${SECRET_COUNT} secrets of which ${REFERRING} carry references (${CROSS_ENVIRONMENT} cross-environment), against none`,
  async run(ctx) {
    const cli = join(ctx.root, 'packages/cli/dist/coffer.js');
    if (!existsSync(cli)) return null;
    const { client, admin } = ctx.fixture;
    const credentialFor = async (name: string, valueOf: (i: number) => string) => {
      const project = await createProjectWithVault(client, admin.keys, { name });
      const vault = await openVault(client, project.id, admin.keys);
      const envs = await environmentsOf(client, project.id);
      await writeSecrets(vault, envs.get(READ_ENV)!, SECRET_COUNT, secretName, valueOf);
      await writeSecrets(vault, envs.get('staging')!, CROSS_ENVIRONMENT, (i) => `SHARED_${i}`);
      const key = await createApiKey(vault, {
        name: 'run',
        role: 'developer',
        scopes: { [READ_ENV]: 'read', staging: 'read' },
      });
      return key.credential;
    };
    const plain = await credentialFor('bench run without references', sampleValue);
    const referring = await credentialFor('bench run with references', referringValue);
    const cwd = mkdtempSync(join(ctx.workDir, 'cli-refs-'));
    const runWith = (credential: string) => () =>
      promisify(execFile)(process.execPath, [cli, 'run', '--env', READ_ENV, '--', 'true'], {
        cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: cwd,
          COFFER_SERVER: ctx.baseUrl,
          COFFER_TOKEN: credential,
          COFFER_CA_FILE: ctx.caFile,
        },
      });
    const without: number[] = [];
    const withRefs: number[] = [];
    await timeRuns(2, 0, runWith(plain));
    await timeRuns(2, 0, runWith(referring));
    for (let i = 0; i < ctx.options.cliRuns; i++) {
      without.push(...(await timeRuns(1, 0, runWith(plain))));
      withRefs.push(...(await timeRuns(1, 0, runWith(referring))));
    }
    const ratio = (100 * median(withRefs)) / median(without);
    return {
      kind: 'value',
      title: this.title,
      value: ratio,
      unit: '%',
      detail: `median with references ${median(withRefs).toFixed(0)} ms, without ${median(without).toFixed(0)} ms; ${withRefs.length} interleaved runs each, fresh process each`,
      target: targets.runReferences,
      pass: null,
      breakdown: { with_references_ms: withRefs, without_references_ms: without },
    };
  },
};

/** The resolver alone: 10,000 secrets, a third of them with one to three references (chains, cross-environment). */
const sdkResolve: ClientScenario = {
  id: 'sdk-resolve-10k',
  title: 'SDK: resolve 10,000 secrets with references (resolver only)',
  async run(ctx) {
    const values: Record<string, string> = {};
    const staging: Record<string, string> = {};
    const name = (i: number) => `SECRET_${String(i).padStart(5, '0')}`;
    for (let i = 0; i < 10_000; i++) {
      values[name(i)] =
        i % 3 === 0
          ? `a-\${${name((i + 1) % 10_000)}}-b-\${${name((i + 2) % 10_000)}}${i % 30 === 0 ? `-\${staging.SHARED_${i % 10}}` : ''}`
          : sampleValue(i);
    }
    for (let i = 0; i < 10; i++) staging[`SHARED_${i}`] = sampleValue(i);
    const resolveAll = () =>
      resolveReferences(values, {
        environment: READ_ENV,
        load: async () => ({ key: 'staging', values: staging }),
      });
    const check = await resolveAll();
    if (Object.keys(check.errors).length > 0) throw new Error('the bench data should resolve');
    // The same 10,000 names with reference-free values: the scan alone, measured alongside.
    const plain = Object.fromEntries(Object.keys(values).map((k, i) => [k, sampleValue(i)]));
    const runs = ctx.options.quick ? 10 : 50;
    const durations: number[] = [];
    const baseline: number[] = [];
    // CPU time beside the wall time: on a shared machine the wall time also counts waiting for a core.
    const cpu: number[] = [];
    await timeRuns(5, 0, resolveAll);
    for (let i = 0; i < runs; i++) {
      const before = process.cpuUsage();
      durations.push(...(await timeRuns(1, 0, resolveAll)));
      const used = process.cpuUsage(before);
      cpu.push((used.user + used.system) / 1000);
      baseline.push(...(await timeRuns(1, 0, () => resolveReferences(plain))));
    }
    return valueRow(
      this.title,
      durations,
      `in-process, no I/O; CPU time median ${median(cpu).toFixed(1)} ms; the same 10,000 without references, interleaved: median ${median(baseline).toFixed(1)} ms`,
      targets.resolve10k,
    );
  },
};

export const CLIENT_SCENARIOS: ClientScenario[] = [
  sdkDecrypt,
  sdkList,
  sdkResolve,
  cliRun,
  cliRunReferences,
  rekeyScenario(1_000),
  rekeyScenario(10_000),
  ...SCAN_SCENARIOS,
];
