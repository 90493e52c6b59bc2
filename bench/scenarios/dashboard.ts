// The web dashboard in headless Chromium against the running server: what a
// first visit downloads, unlock → grid, and the big grid's render and
// keystrokes. Measured and reported, never asserted (the tests check behaviour).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, CDPSession, Page, Response } from 'playwright-core';
import {
  CofferClient,
  DEFAULT_KDF_PARAMS,
  allEnvironments,
  createEnvironment,
  createProjectWithVault,
  importSecrets,
  openVault,
  ready,
  signUp,
  type UserKeys,
} from '@coffer/sdk';
import { median } from '../lib/measure.js';
import type { BenchOptions } from '../lib/options.js';
import { targets, type ValueRow } from '../lib/report.js';
import { sampleValue, trustingFetch } from './fixture.js';

export const CHROMIUM = '/usr/bin/chromium';

/** Every row this module can report; `npm run bench -- dashboard` selects them all. */
export const DASHBOARD_IDS = [
  'dashboard-first-load',
  'dashboard-unlock',
  'dashboard-argon2id',
  'dashboard-unlock-rest',
  'dashboard-grid-500x5',
  'dashboard-grid-500x5-render',
  'dashboard-reveal',
  'dashboard-edit',
] as const;
type DashboardId = (typeof DASHBOARD_IDS)[number];

export interface DashboardContext {
  baseUrl: string;
  caFile: string;
  root: string;
  options: BenchOptions;
  selected: (id: string) => boolean;
  say: (text: string) => void;
  /** Adds a block to the report printed after the tables (the per-file weights). */
  report: (text: string) => void;
  push: (row: Omit<ValueRow, 'backend'>) => void;
}

/** Why the dashboard cannot be measured here, or null. */
export function dashboardMissing(root: string): string | null {
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM}; Debian package chromium`;
  if (!existsSync(join(root, 'packages/web/dist/index.html')))
    return 'the dashboard is not built (packages/web/dist)';
  return null;
}

const PASSWORD = 'correct horse battery staple dashboard';
const SMALL = { secrets: 100, environments: 3 };
const BIG = { secrets: 500, environments: 5 };
/** Besides the three every project starts with, for the big grid. */
const EXTRA_ENVIRONMENTS = ['QA', 'Preview'];
const KB = 1000;

interface SeededProject {
  id: string;
  /** Value of each secret by environment name, then secret name: what a reveal must show. */
  values: Map<string, Map<string, string>>;
}

/** A user (default KDF parameters) and the two projects, written through the SDK. */
async function seed(ctx: DashboardContext): Promise<{
  email: string;
  small: SeededProject;
  big: SeededProject;
}> {
  await ready();
  const started = performance.now();
  const client = new CofferClient({ baseUrl: ctx.baseUrl, fetch: trustingFetch(ctx.caFile) });
  const email = 'dashboard@bench.example';
  const user = await signUp(client, { email, name: 'Dashboard Bench', password: PASSWORD });
  const small = await seedProject(client, user.keys, 'bench 100 × 3', SMALL.secrets, []);
  const big = await seedProject(
    client,
    user.keys,
    'bench 500 × 5',
    BIG.secrets,
    EXTRA_ENVIRONMENTS,
  );
  ctx.say(
    `  setup through the SDK: user (default KDF), ${SMALL.secrets} × ${SMALL.environments} and ` +
      `${BIG.secrets} × ${BIG.environments} secrets (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  return { email, small, big };
}

async function seedProject(
  client: CofferClient,
  keys: UserKeys,
  name: string,
  secrets: number,
  extraEnvironments: string[],
): Promise<SeededProject> {
  const project = await createProjectWithVault(client, keys, { name });
  for (const env of extraEnvironments) await createEnvironment(client, project.id, { name: env });
  const vault = await openVault(client, project.id, keys);
  const scope = { client, projectId: project.id, keys: vault };
  const values = new Map<string, Map<string, string>>();
  for (const env of await allEnvironments(client, project.id)) {
    const map = new Map<string, string>();
    for (let i = 0; i < secrets; i++)
      map.set(`DASH_SECRET_${String(i).padStart(3, '0')}`, sampleValue(i));
    await importSecrets(scope, env.slug, JSON.stringify(Object.fromEntries(map)), 'json');
    values.set(env.name, map);
  }
  return { id: project.id, values };
}

// ---- In the page ---------------------------------------------------------------
// Scripts run in the page as source text (a function compiled by tsx may carry
// helpers the page does not have). Times are performance.now() of the page.

/** After the next paint: rAF callbacks run before a frame is painted, a task posted from one after it. */
const AFTER_PAINT = `(cb) => requestAnimationFrame(() => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => cb(performance.now());
  channel.port2.postMessage(null);
})`;

/**
 * Arms the unlock measurement: the click on the submit button starts it; it
 * ends at the first paint after the grid says it is done (aria-busy="false")
 * with one row per secret (`aria-rowcount`, the header row included: big grids
 * render only the rows in view) and its first row drawn. The dashboard decrypts an environment's
 * values before its query resolves, so aria-busy turns false only once every
 * value is decrypted.
 */
const ARM_UNLOCK = `(expected) => {
  const afterPaint = ${AFTER_PAINT};
  performance.clearResourceTimings();
  performance.setResourceTimingBufferSize(5000);
  const rec = { clickAt: null, doneAt: null, paintedAt: null };
  let resolve;
  rec.painted = new Promise((r) => (resolve = r));
  window.__cofferBench = rec;
  document.addEventListener('click', (event) => {
    if (rec.clickAt === null && event.target.closest('button[type="submit"]')) rec.clickAt = event.timeStamp;
  }, true);
  const done = () => {
    const grid = document.querySelector('table[role="grid"]');
    return grid !== null && grid.getAttribute('aria-busy') === 'false' &&
      grid.getAttribute('aria-rowcount') === String(expected + 1) &&
      grid.querySelector('tbody th[scope="row"]') !== null;
  };
  const observer = new MutationObserver(() => {
    if (rec.clickAt === null || rec.doneAt !== null || !done()) return;
    rec.doneAt = performance.now();
    observer.disconnect();
    afterPaint((t) => {
      rec.paintedAt = t;
      const api = performance.getEntriesByType('resource')
        .filter((e) => e.startTime >= rec.clickAt)
        .map((e) => ({ path: new URL(e.name).pathname, start: e.startTime, end: e.responseEnd }));
      resolve({ clickAt: rec.clickAt, doneAt: rec.doneAt, paintedAt: rec.paintedAt, requests: api });
    });
  });
  observer.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-busy', 'aria-rowcount'] });
}`;

interface UnlockRecord {
  clickAt: number;
  doneAt: number;
  paintedAt: number;
  requests: Array<{ path: string; start: number; end: number }>;
}

/**
 * Arms one keystroke's measurement: from the keydown's timestamp to the next
 * paint, counting the DOM mutations in between (by grid cell, and outside the grid).
 */
const ARM_KEY = `(key) => {
  const afterPaint = ${AFTER_PAINT};
  const grid = document.querySelector('table[role="grid"]');
  let records = 0;
  const nodes = new Set();
  const cells = new Set();
  let outside = 0;
  const count = (list) => {
    for (const m of list) {
      records++;
      nodes.add(m.target);
      m.addedNodes.forEach((n) => nodes.add(n));
      m.removedNodes.forEach((n) => nodes.add(n));
      const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
      const cell = el && el.closest('[data-cell]');
      if (cell && grid.contains(cell)) cells.add(cell.dataset.cell);
      else if (!el || !grid.contains(el)) outside++;
    }
  };
  const observer = new MutationObserver(count);
  let resolve;
  const rec = { painted: new Promise((r) => (resolve = r)) };
  window.__cofferBench = rec;
  const onKey = (event) => {
    if (event.key !== key) return;
    document.removeEventListener('keydown', onKey, true);
    const at = event.timeStamp;
    afterPaint((paintedAt) => {
      count(observer.takeRecords());
      observer.disconnect();
      resolve({ ms: paintedAt - at, records, nodes: nodes.size, cells: [...cells], outside });
    });
  };
  observer.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  document.addEventListener('keydown', onKey, true);
}`;

interface KeyRecord {
  ms: number;
  records: number;
  nodes: number;
  cells: string[];
  outside: number;
}

/** Focuses a grid cell (making it the active one) and lets two frames pass. */
const FOCUS_CELL = `(id) => new Promise((resolve, reject) => {
  const cell = document.querySelector('[data-cell="' + id + '"]');
  if (!cell) return reject(new Error('no cell ' + id));
  cell.focus();
  requestAnimationFrame(() => requestAnimationFrame(() => resolve()));
})`;

/** The cell's environment (column header), secret name (row header) and shown value. */
const CELL_TEXT = `(id) => {
  const cell = document.querySelector('[data-cell="' + id + '"]');
  const column = Number(id.split(':')[1]);
  const header = document.querySelectorAll('table[role="grid"] thead th')[column];
  return {
    environment: header?.querySelector('.env-name')?.textContent ?? '',
    name: cell?.closest('tr')?.querySelector('th[scope="row"] .name')?.textContent ?? '',
    value: cell?.querySelector('.value')?.textContent ?? null,
    state: cell?.getAttribute('data-state') ?? null,
  };
}`;

/** Argon2id with the app's own libsodium chunk, as the first derivation of a fresh page. */
const ARGON2ID = `async ({ url, ops, memKiB }) => {
  const module = await import(url);
  const sodium = module.default ?? module;
  await sodium.ready;
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const password = new TextEncoder().encode('correct horse battery staple dashboard');
  const start = performance.now();
  sodium.crypto_pwhash(32, password, salt, ops, memKiB * 1024, sodium.crypto_pwhash_ALG_ARGON2ID13);
  return performance.now() - start;
}`;

const call = <T>(page: Page, fn: string, arg?: unknown): Promise<T> =>
  page.evaluate(`(${fn})(${arg === undefined ? '' : JSON.stringify(arg)})`) as Promise<T>;

/** Awaits the armed measurement's promise in the page, with a limit and the page's errors on failure. */
async function settled<T>(page: Page, errors: string[], what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      page.evaluate('window.__cofferBench.painted') as Promise<T>,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `dashboard: ${what} did not finish within 60 s (at ${page.url()})` +
                  (errors.length ? `; page errors: ${errors.join('; ')}` : ''),
              ),
            ),
          60_000,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The renderer's main-thread time by kind (Chrome's Performance.getMetrics,
 * cumulative): a difference around a measurement tells script from style and
 * layout.
 */
type MainThread = { script: number; style: number; layout: number; tasks: number };
async function mainThread(session: CDPSession): Promise<MainThread> {
  const { metrics } = (await session.send('Performance.getMetrics')) as {
    metrics: Array<{ name: string; value: number }>;
  };
  const get = (name: string) => (metrics.find((m) => m.name === name)?.value ?? 0) * 1000;
  return {
    script: get('ScriptDuration'),
    style: get('RecalcStyleDuration'),
    layout: get('LayoutDuration'),
    tasks: get('TaskDuration'),
  };
}
const since = (before: MainThread, after: MainThread): MainThread => ({
  script: after.script - before.script,
  style: after.style - before.style,
  layout: after.layout - before.layout,
  tasks: after.tasks - before.tasks,
});
function describeMainThread(samples: MainThread[]): string {
  const m = (k: keyof MainThread) => median(samples.map((s) => s[k])).toFixed(0);
  return `main thread (median): busy ${m('tasks')} ms, of which script ${m('script')}, style ${m('style')}, layout ${m('layout')}`;
}

// ---- Measurements --------------------------------------------------------------

interface Asset {
  path: string;
  type: 'js' | 'css';
  /** Bytes on the wire (the encoded body), as the browser received them. */
  transferred: number;
  /** The body once decoded. */
  decoded: number;
  encoding: string;
  /** Requested before the sign-in (the load of `/` alone). */
  beforeSignIn: boolean;
}

/** Collects the same-origin JS and CSS responses of a context (a cold cache: one first visit). */
function watchAssets(context: BrowserContext, origin: string) {
  const responses: Array<{ response: Response; beforeSignIn: boolean }> = [];
  let signingIn = false;
  const onResponse = (response: Response) => {
    const url = new URL(response.url());
    if (url.origin !== origin) return;
    const type = response.request().resourceType();
    const isJs = type === 'script' || url.pathname.endsWith('.js');
    const isCss = type === 'stylesheet' || url.pathname.endsWith('.css');
    if (isJs || isCss) responses.push({ response, beforeSignIn: !signingIn });
  };
  context.on('response', onResponse);
  return {
    signingIn: () => (signingIn = true),
    async collect(): Promise<Asset[]> {
      context.off('response', onResponse);
      const assets: Asset[] = [];
      for (const { response, beforeSignIn } of responses) {
        const sizes = await response.request().sizes();
        const path = new URL(response.url()).pathname;
        assets.push({
          path,
          type: path.endsWith('.css') ? 'css' : 'js',
          transferred: sizes.responseBodySize,
          decoded: (await response.body()).length,
          encoding: response.headers()['content-encoding'] ?? 'identity',
          beforeSignIn,
        });
      }
      return assets;
    },
  };
}

const isLibsodium = (path: string) => /libsodium/i.test(path);

function firstLoadRow(assets: Asset[]): {
  row: Omit<ValueRow, 'backend'>;
  table: string;
} {
  const sum = (list: Asset[]) => list.reduce((n, a) => n + a.transferred, 0);
  const total = sum(assets);
  const root = sum(assets.filter((a) => a.beforeSignIn));
  const sodium = sum(assets.filter((a) => isLibsodium(a.path)));
  const kb = (bytes: number) => (bytes / KB).toFixed(1);
  const plain = assets.filter((a) => a.encoding === 'identity' && a.decoded > 1024);
  const table = [
    'Dashboard first visit, JS and CSS (KB = 1,000 bytes; transferred = encoded body as received):',
    ...assets.map(
      (a) =>
        `  ${kb(a.transferred).padStart(7)} KB  ${a.encoding.padEnd(8)} ${kb(a.decoded).padStart(7)} KB decoded  ` +
        `${a.path}${a.beforeSignIn ? '' : '  (fetched at sign-in)'}`,
    ),
    `  ${kb(total).padStart(7)} KB  total; libsodium ${kb(sodium)} KB (${((sodium / total) * 100).toFixed(0)} %)`,
  ].join('\n');
  return {
    row: {
      kind: 'value',
      id: 'dashboard-first-load',
      title: 'dashboard: first visit, JS + CSS transferred',
      value: total / KB,
      unit: 'KB',
      detail:
        `${assets.length} files, gzip as served; load of / ${kb(root)} KB, then at sign-in ${kb(total - root)} KB; ` +
        `libsodium ${kb(sodium)} KB (${((sodium / total) * 100).toFixed(0)} %)` +
        (plain.length ? `; NOT compressed: ${plain.map((a) => a.path).join(', ')}` : ''),
      target: targets.dashboardFirstLoad,
      pass: null,
      breakdown: { files: assets },
    },
    table,
  };
}

/** Where the time of one unlock went, from the page's resource timings. */
function unlockPhases(run: UnlockRecord) {
  const api = run.requests.filter((r) => r.path.startsWith('/v1/'));
  const keys = api.find((r) => r.path === '/v1/me/keys');
  const keysEnd = keys?.end ?? run.clickAt;
  const after = api.filter((r) => r.start >= keysEnd && r.end <= run.doneAt);
  const firstAfter = after.length ? Math.min(...after.map((r) => r.start)) : keysEnd;
  const lastEnd = after.length ? Math.max(...after.map((r) => r.end)) : firstAfter;
  return {
    total: run.paintedAt - run.clickAt,
    // Until the password's parameters arrived (a frame for "Deriving keys…",
    // libsodium loaded and started, GET /v1/me/keys).
    toKeys: keysEnd - run.clickAt,
    // Argon2id, the unwrap and the first render of the project page.
    derive: firstAfter - keysEnd,
    // The project, environments, vault and secret listings, each decrypted.
    fetchDecrypt: lastEnd - firstAfter,
    // From the last answer to the painted grid (the last decryptions and the render).
    render: run.paintedAt - lastEnd,
    requests: api.length,
  };
}
type Phases = ReturnType<typeof unlockPhases>;

const ms = (x: number) => `${x.toFixed(0)} ms`;
const spread = (values: number[]) => {
  const digits = Math.max(...values) < 100 ? 1 : 0;
  return `median of ${values.length}, min ${Math.min(...values).toFixed(digits)}, max ${Math.max(...values).toFixed(digits)}`;
};

/** The run whose total is the median (the lower one of an even count), for its phases. */
function medianRun(phases: UnlockRun[]): UnlockRun {
  const sorted = [...phases].sort((a, b) => a.total - b.total);
  return sorted[(sorted.length - 1) >> 1]!;
}

type UnlockRun = Phases & { mainThread: MainThread };
type KeyRun = KeyRecord & { mainThread: MainThread };

interface Probe {
  page: Page;
  cdp: CDPSession;
  errors: string[];
}

async function timeUnlock(
  { page, cdp, errors }: Probe,
  url: string,
  expected: number,
): Promise<UnlockRun> {
  await page.goto(url);
  const password = page.getByLabel('Password');
  await password.waitFor();
  await password.fill(PASSWORD);
  await call(page, ARM_UNLOCK, expected);
  const before = await mainThread(cdp);
  await page.getByRole('button', { name: 'Unlock', exact: true }).click();
  const run = await settled<UnlockRecord>(page, errors, `unlock → ${expected} rows`);
  return { ...unlockPhases(run), mainThread: since(before, await mainThread(cdp)) };
}

async function timeKey({ page, cdp, errors }: Probe, key: string, what: string): Promise<KeyRun> {
  await call(page, ARM_KEY, key);
  const before = await mainThread(cdp);
  await page.keyboard.press(key === ' ' ? 'Space' : key);
  const record = await settled<KeyRecord>(page, errors, what);
  return { ...record, mainThread: since(before, await mainThread(cdp)) };
}

function mutationSummary(records: KeyRun[]): string {
  const last = records[records.length - 1]!;
  const cells = Math.max(...records.map((r) => r.cells.length));
  const outside = Math.max(...records.map((r) => r.outside));
  return (
    `DOM per keystroke: ${median(records.map((r) => r.nodes))} nodes in ${median(records.map((r) => r.records))} ` +
    `mutations (median), at most ${cells} cell${cells === 1 ? '' : 's'} of the grid and ` +
    `${outside} mutation${outside === 1 ? '' : 's'} outside it (last: cells ${last.cells.join(' ') || 'none'})`
  );
}

export async function measureDashboard(ctx: DashboardContext): Promise<void> {
  const want = (id: DashboardId) => ctx.selected(id);
  const unlockRuns = ctx.options.quick ? 2 : 5;
  const bigRuns = ctx.options.quick ? 1 : 5;
  const keyRuns = ctx.options.quick ? 3 : 10;
  const { email, small, big } = await seed(ctx);
  const origin = new URL(ctx.baseUrl).origin;
  const smallUrl = `${ctx.baseUrl}/projects/${small.id}`;
  const bigUrl = `${ctx.baseUrl}/projects/${big.id}`;

  const { chromium } = await import('playwright-core');
  let browser: Browser | null = null;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
      ],
    });
    // One person's browser: its own cookies and a cold HTTP cache.
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 800 },
      locale: 'en-GB',
    });
    context.setDefaultTimeout(30_000);
    const errors: string[] = [];
    const page = await context.newPage();
    page.on('pageerror', (error) => errors.push(`${error.name}: ${error.message}`));
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const probe: Probe = { page, cdp, errors };

    // 1. A first visit: `/` (the sign-in page), then signing in and opening a
    // project, which loads libsodium for the key derivation.
    const assets = watchAssets(context, origin);
    await page.goto(`${ctx.baseUrl}/`, { waitUntil: 'networkidle' });
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    assets.signingIn();
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('link', { name: 'bench 100 × 3', exact: true }).click();
    await page
      .locator('table[role="grid"][aria-busy="false"] tbody th[scope="row"]')
      .nth(SMALL.secrets - 1)
      .waitFor();
    await page.waitForLoadState('networkidle');
    const files = await assets.collect();
    const libsodiumPath = files.find((a) => /libsodium-wrappers/i.test(a.path))?.path;
    if (want('dashboard-first-load')) {
      const { row, table } = firstLoadRow(files);
      ctx.push(row);
      ctx.report(table);
    }

    // 2. Unlock → grid, 100 × 3. The same browser comes back to the project
    // (assets cached, keys gone), as after a reload or the auto-lock.
    const wantSplit = want('dashboard-unlock-rest');
    const argonNeeded = want('dashboard-argon2id') || wantSplit;
    const unlock: UnlockRun[] = [];
    if (want('dashboard-unlock') || wantSplit) {
      await timeUnlock(probe, smallUrl, SMALL.secrets); // warm-up, untimed
      for (let i = 0; i < unlockRuns; i++)
        unlock.push(await timeUnlock(probe, smallUrl, SMALL.secrets));
      const m = medianRun(unlock);
      if (want('dashboard-unlock'))
        ctx.push({
          kind: 'value',
          id: 'dashboard-unlock',
          title: `dashboard: unlock → grid, ${SMALL.secrets} secrets × ${SMALL.environments} envs`,
          value: median(unlock.map((p) => p.total)),
          unit: 'ms',
          detail:
            `click → painted, ${spread(unlock.map((p) => p.total))}; median run: to keys ${ms(m.toKeys)}, ` +
            `derive + render ${ms(m.derive)}, ${m.requests} requests + decrypt ${ms(m.fetchDecrypt)}, ` +
            `last answer → painted ${ms(m.render)}; ${describeMainThread(unlock.map((r) => r.mainThread))}`,
          target: targets.dashboardUnlock,
          pass: null,
          breakdown: { runs: unlock },
        });
    }

    // How the unlock splits: Argon2id is timed alone in the same browser with
    // the same parameters (the SDK's defaults, which the user signed up with),
    // by the app's own libsodium chunk as the first derivation of a freshly
    // loaded page, exactly where the unlock runs it; the rest is the median
    // unlock minus the median Argon2id. (The gap between GET /v1/me/keys
    // answering and the next request, Argon2id + unwrap + a render, is in the
    // unlock row's detail as a cross-check.)
    if (argonNeeded) {
      if (!libsodiumPath) throw new Error('dashboard: no libsodium chunk among the assets loaded');
      const argon: number[] = [];
      for (let i = 0; i < unlockRuns; i++) {
        await page.goto(smallUrl);
        await page.getByLabel('Password').waitFor();
        argon.push(
          await call<number>(page, ARGON2ID, {
            url: `${origin}${libsodiumPath}`,
            ops: DEFAULT_KDF_PARAMS.ops_limit,
            memKiB: DEFAULT_KDF_PARAMS.mem_limit_kib,
          }),
        );
      }
      const kdf = `t=${DEFAULT_KDF_PARAMS.ops_limit}, ${DEFAULT_KDF_PARAMS.mem_limit_kib / 1024} MiB`;
      if (want('dashboard-argon2id'))
        ctx.push({
          kind: 'value',
          id: 'dashboard-argon2id',
          title: `dashboard: Argon2id alone (${kdf}) in the page`,
          value: median(argon),
          unit: 'ms',
          detail: `${spread(argon)}; the app's libsodium chunk, first derivation of a fresh page`,
          target: null,
          pass: null,
          breakdown: { runs: argon },
        });
      if (wantSplit) {
        const total = median(unlock.map((p) => p.total));
        ctx.push({
          kind: 'value',
          id: 'dashboard-unlock-rest',
          title: 'dashboard: unlock → grid, all but Argon2id',
          value: total - median(argon),
          unit: 'ms',
          detail: `median unlock ${ms(total)} − median Argon2id ${ms(median(argon))}`,
          target: targets.dashboardUnlockRest,
          pass: null,
        });
      }
    }

    // 3. The big grid, 500 × 5: unlock → grid, then keystrokes on the painted grid.
    const wantKeys = want('dashboard-reveal') || want('dashboard-edit');
    if (want('dashboard-grid-500x5') || want('dashboard-grid-500x5-render') || wantKeys) {
      const runs: UnlockRun[] = [];
      await timeUnlock(probe, bigUrl, BIG.secrets); // warm-up, untimed
      for (let i = 0; i < bigRuns; i++) runs.push(await timeUnlock(probe, bigUrl, BIG.secrets));
      const m = medianRun(runs);
      const title = `${BIG.secrets} secrets × ${BIG.environments} envs`;
      if (want('dashboard-grid-500x5'))
        ctx.push({
          kind: 'value',
          id: 'dashboard-grid-500x5',
          title: `dashboard: unlock → grid, ${title}`,
          value: median(runs.map((p) => p.total)),
          unit: 'ms',
          detail:
            `click → painted, ${spread(runs.map((p) => p.total))}; median run: to keys ${ms(m.toKeys)}, ` +
            `derive + render ${ms(m.derive)}, ${m.requests} requests + decrypt ${ms(m.fetchDecrypt)}; ` +
            describeMainThread(runs.map((r) => r.mainThread)),
          target: null,
          pass: null,
          breakdown: { runs },
        });
      if (want('dashboard-grid-500x5-render'))
        ctx.push({
          kind: 'value',
          id: 'dashboard-grid-500x5-render',
          title: `dashboard: render the grid, ${title}`,
          value: median(runs.map((p) => p.render)),
          unit: 'ms',
          detail: `last listing answered → grid painted (last page decrypted; ${BIG.secrets * BIG.environments} cells, the rows in view rendered), ${spread(runs.map((p) => p.render))}`,
          target: null,
          pass: null,
        });

      // Different cells each time, among the rows in view (the grid renders only those):
      // row i·7 mod 20, every column in turn.
      const cellOf = (i: number) => `${((i * 7) % 20) + 1}:${(i % BIG.environments) + 1}`;
      // The floor on this machine: a key the grid ignores, from the keydown to the next paint.
      const floor: KeyRun[] = [];
      if (wantKeys) {
        await call(page, FOCUS_CELL, cellOf(0));
        for (let i = 0; i < keyRuns; i++) floor.push(await timeKey(probe, 'x', 'an ignored key'));
      }
      const floorText = () =>
        `a key the grid ignores: ${median(floor.map((r) => r.ms)).toFixed(0)} ms`;
      if (want('dashboard-reveal')) {
        const records: KeyRun[] = [];
        for (let i = 0; i < keyRuns; i++) {
          const id = cellOf(i);
          await call(page, FOCUS_CELL, id);
          records.push(await timeKey(probe, ' ', `reveal ${id}`));
          const shown = await call<{ environment: string; name: string; value: string | null }>(
            page,
            CELL_TEXT,
            id,
          );
          if (shown.value !== big.values.get(shown.environment)?.get(shown.name))
            throw new Error(
              `dashboard: revealing ${shown.name} in ${shown.environment} did not show its value`,
            );
        }
        ctx.push({
          kind: 'value',
          id: 'dashboard-reveal',
          title: `dashboard: reveal one cell (Space → painted), ${title}`,
          value: median(records.map((r) => r.ms)),
          unit: 'ms',
          detail: `${spread(records.map((r) => r.ms))} (${floorText()}); ${describeMainThread(records.map((r) => r.mainThread))}; ${mutationSummary(records)}`,
          target: null,
          pass: null,
          breakdown: { runs: records },
        });
      }
      if (want('dashboard-edit')) {
        const records: KeyRun[] = [];
        for (let i = 0; i < keyRuns; i++) {
          const id = cellOf(i + keyRuns);
          await call(page, FOCUS_CELL, id);
          await page.keyboard.press('Enter');
          const editor = page.locator(`[data-cell="${id}"] textarea`);
          await editor.waitFor();
          await editor.fill(`edited by the bench ${i}`);
          records.push(await timeKey(probe, 'Enter', `stage an edit of ${id}`));
          const cell = await call<{ state: string | null }>(page, CELL_TEXT, id);
          if (cell.state !== 'changed')
            throw new Error(`dashboard: the edit of ${id} was not staged`);
        }
        ctx.push({
          kind: 'value',
          id: 'dashboard-edit',
          title: `dashboard: stage one edit (Enter → painted), ${title}`,
          value: median(records.map((r) => r.ms)),
          unit: 'ms',
          detail: `${spread(records.map((r) => r.ms))} (${floorText()}); ${describeMainThread(records.map((r) => r.mainThread))}; ${mutationSummary(records)}`,
          target: null,
          pass: null,
          breakdown: { runs: records },
        });
      }
    }
    if (errors.length) throw new Error(`dashboard: page errors: ${errors.join('; ')}`);
  } finally {
    await browser?.close();
  }
}
