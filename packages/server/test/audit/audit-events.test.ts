import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/db.js';
import { signUp, type TestUser } from '../support/users.js';
import { errorOf, eventually, expectStatus } from '../support/http.js';
import { addMember } from '../support/projects.js';
import { projectWithVault, type VaultProject } from '../support/vault.js';
import { createToken, putSecret, secretsUrl } from '../secrets/fixtures.js';

const EVENT_KEYS = [
  'action',
  'actor_id',
  'created_at',
  'credential',
  'data',
  'id',
  'ip',
  'request_id',
  'target',
];

interface AuditEvent {
  id: string;
  action: string;
  actor_id: string | null;
  credential: { kind: string; id: string } | null;
  target: { type: string; id: string } | null;
  data: Record<string, unknown>;
  created_at: string;
  request_id: string | null;
  ip: string | null;
}

for (const dialect of DIALECTS) {
  describe(`audit events endpoint (${dialect})`, () => {
    let t: TestApp;
    let project: VaultProject;
    let dev: TestUser;
    let viewer: TestUser;
    let url: string;
    let midpoint: string;

    before(async () => {
      t = await startTestApp(dialect);
      project = await projectWithVault(t);
      dev = (await addMember(t, project.admin, project.id, 'developer')).user;
      viewer = (await addMember(t, project.admin, project.id, 'viewer')).user;
      url = `/v1/projects/${project.id}/audit-events`;
      t.clock.advance(60_000);
      await putSecret(t, project, project.env.staging, 'EARLY', 'x', dev.headers);
      t.clock.advance(60_000);
      midpoint = t.clock.now().toISOString();
      t.clock.advance(60_000);
      await putSecret(t, project, project.env.staging, 'LATE', 'x', project.admin.headers);
      // Activity in another project never shows up here.
      const other = await projectWithVault(t);
      await putSecret(t, other, other.env.staging, 'OTHER', 'x', other.admin.headers);
    });
    after(async () => t.close());

    const fetch = async (query = '', headers: Record<string, string> = project.admin.headers) => {
      const res = await t.request({ method: 'GET', url: `${url}${query}`, headers });
      expectStatus(res, 200);
      return res.data as { data: AuditEvent[]; pagination: { total: number } };
    };

    it('returns events with exact fields, newest first', async () => {
      const body = await fetch();
      assert.ok(body.data.length >= 4);
      for (const e of body.data) {
        assert.deepEqual(Object.keys(e).sort(), EVENT_KEYS);
        assert.match(e.id, /^evt_/);
      }
      const times = body.data.map((e) => e.created_at);
      assert.deepEqual(times, [...times].sort().reverse());
      const late = body.data.find((e) => e.action === 'secret.created' && e.data.name === 'LATE')!;
      assert.equal(late.actor_id, project.admin.id);
      assert.deepEqual(Object.keys(late.credential!).sort(), ['id', 'kind']);
      assert.equal(late.credential!.kind, 'session');
      assert.match(late.credential!.id, /^ses_/);
      assert.deepEqual(Object.keys(late.target!).sort(), ['id', 'type']);
      assert.equal(late.target!.type, 'secret');
      assert.match(late.target!.id, /^sec_/);
      assert.deepEqual(late.data, {
        environment_id: project.env.staging.id,
        name: 'LATE',
        version: 1,
      });
      assert.match(String(late.request_id), /^req_/);
      assert.ok(!body.data.some((e) => e.data.name === 'OTHER'));
    });

    it('filters by action, actor and time window, and paginates', async () => {
      const created = await fetch('?action=secret.created&order=asc');
      assert.deepEqual(
        created.data.map((e) => e.data.name),
        ['EARLY', 'LATE'],
      );
      const byDev = await fetch(`?actor_id=${dev.id}`);
      assert.ok(byDev.data.length > 0);
      assert.ok(byDev.data.every((e) => e.actor_id === dev.id));
      assert.ok(byDev.data.some((e) => e.data.name === 'EARLY'));

      const before = await fetch(`?action=secret.created&until=${encodeURIComponent(midpoint)}`);
      assert.deepEqual(
        before.data.map((e) => e.data.name),
        ['EARLY'],
      );
      const since = await fetch(`?action=secret.created&since=${encodeURIComponent(midpoint)}`);
      assert.deepEqual(
        since.data.map((e) => e.data.name),
        ['LATE'],
      );
      // An offset is understood: the same instant written in +02:00.
      const shifted = new Date(midpoint);
      const local = new Date(shifted.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      const sinceLocal = await fetch(`?action=secret.created&since=${encodeURIComponent(local)}`);
      assert.deepEqual(
        sinceLocal.data.map((e) => e.data.name),
        ['LATE'],
      );

      const all = await fetch('?per_page=100');
      const page = await fetch('?per_page=2&page=2');
      assert.equal(page.pagination.total, all.pagination.total);
      assert.deepEqual(
        page.data.map((e) => e.id),
        all.data.slice(2, 4).map((e) => e.id),
      );
    });

    it('rejects bad filters with 400 naming the parameter', async () => {
      for (const [query, field] of [
        ['?since=yesterday', 'since'],
        ['?until=2026-13-01T00:00:00Z', 'until'],
        ['?sort=action', 'sort'],
        ['?per_page=101', 'per_page'],
        ['?colour=red', 'colour'],
      ] as const) {
        const res = await t.request({
          method: 'GET',
          url: `${url}${query}`,
          headers: project.admin.headers,
        });
        assert.equal(res.statusCode, 400, query);
        assert.equal(errorOf(res).details[0].field, field, query);
      }
    });

    it('is for admins only: developers, viewers and non-admin keys get 403, strangers 404', async () => {
      for (const headers of [dev.headers, viewer.headers]) {
        const res = await t.request({ method: 'GET', url, headers });
        assert.equal(res.statusCode, 403);
        assert.equal(errorOf(res).code, 'forbidden');
      }
      const devKey = await createToken(t, project, 'api_key', {}, 'developer');
      assert.equal(
        (await t.request({ method: 'GET', url, headers: devKey.headers })).statusCode,
        403,
      );
      const ci = await createToken(t, project, 'ci_token', {});
      assert.equal((await t.request({ method: 'GET', url, headers: ci.headers })).statusCode, 403);
      const adminKey = await createToken(t, project, 'api_key', {}, 'admin');
      assert.ok((await fetch('', adminKey.headers)).data.length > 0);
      const stranger = await signUp(t);
      assert.equal(
        (await t.request({ method: 'GET', url, headers: stranger.headers })).statusCode,
        404,
      );
    });

    it("shows a token's reads of values with the credential that made them", async () => {
      const key = await createToken(t, project, 'api_key', { [project.env.staging.id]: 'read' });
      expectStatus(
        await t.request({
          method: 'GET',
          url: secretsUrl(project, 'staging', '/EARLY'),
          headers: key.headers,
        }),
        200,
      );
      const read = await eventually(async () => {
        const body = await fetch('?action=secret.read');
        return body.data.find((e) => e.credential?.id === key.id);
      }, 'the secret.read event');
      assert.deepEqual(read.credential, { kind: 'api_key', id: key.id });
      assert.equal(read.actor_id, project.admin.id);
      assert.equal(read.data.name, 'EARLY');
      assert.ok(!('value' in read.data));
    });
  });
}
