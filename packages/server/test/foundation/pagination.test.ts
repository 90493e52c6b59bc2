import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, type TestUser } from '../support/users.js';
import { createProject } from '../support/projects.js';

interface Page {
  data: { id: string; name: string; created_at: string }[];
  pagination: { page: number; per_page: number; total: number; total_pages: number };
}

const PROJECTS = 45;

for (const dialect of DIALECTS) {
  describe(`pagination on GET /v1/projects (${dialect})`, () => {
    let t: TestApp;
    let user: TestUser;
    /** In creation order; names deliberately not in creation order. */
    const created: { id: string; name: string }[] = [];

    before(async () => {
      t = await startTestApp(dialect);
      user = await signUp(t);
      for (let i = 0; i < PROJECTS; i++) {
        // Every third project shares its creation instant with the previous one,
        // so the order must break ties (on id) to page consistently.
        if (i % 3 !== 0) t.clock.advance(1);
        const name = `project ${String((i * 17) % PROJECTS).padStart(2, '0')}`;
        created.push({ id: (await createProject(t, user, name)).id, name });
      }
      // A project of someone else never shows up, nor counts in the total.
      await createProject(t, await signUp(t), 'not mine');
    });
    after(async () => t.close());

    const list = async (query = '') => {
      const res = await t.request({
        method: 'GET',
        url: `/v1/projects${query}`,
        headers: user.headers,
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.data as Page;
    };

    it('defaults: page 1, 20 per page, newest first, exact total and total_pages', async () => {
      const page = await list();
      assert.deepEqual(page.pagination, {
        page: 1,
        per_page: 20,
        total: PROJECTS,
        total_pages: 3,
      });
      assert.equal(page.data.length, 20);
      const newest = created.at(-1)!;
      assert.equal(page.data[0]!.id, newest.id);
      const times = page.data.map((p) => p.created_at);
      assert.deepEqual(times, [...times].sort().reverse());
    });

    it('walking every page yields each project exactly once, in a stable order', async () => {
      for (const order of ['asc', 'desc']) {
        for (const sort of ['created_at', 'name']) {
          const seen: string[] = [];
          for (let p = 1; p <= 3; p++) {
            const page = await list(`?page=${p}&per_page=20&sort=${sort}&order=${order}`);
            assert.equal(page.pagination.total, PROJECTS);
            assert.equal(page.data.length, p < 3 ? 20 : 5);
            seen.push(...page.data.map((x) => x.id));
          }
          assert.equal(
            new Set(seen).size,
            PROJECTS,
            `${sort} ${order}: no duplicates, none missing`,
          );
          assert.deepEqual(new Set(seen), new Set(created.map((c) => c.id)));
        }
      }
    });

    it('sort=name&order=asc sorts by name', async () => {
      const page = await list('?sort=name&order=asc&per_page=100');
      const names = page.data.map((p) => p.name);
      assert.deepEqual(names, [...created.map((c) => c.name)].sort());
    });

    it('per_page up to 100; a page past the end is empty with the same totals', async () => {
      const all = await list('?per_page=100');
      assert.equal(all.data.length, PROJECTS);
      assert.deepEqual(all.pagination, { page: 1, per_page: 100, total: PROJECTS, total_pages: 1 });
      const beyond = await list('?page=4&per_page=15');
      assert.deepEqual(beyond.data, []);
      assert.deepEqual(beyond.pagination, {
        page: 4,
        per_page: 15,
        total: PROJECTS,
        total_pages: 3,
      });
      const last = await list('?page=5&per_page=10');
      assert.equal(last.data.length, 5);
      assert.equal(last.pagination.total_pages, 5);
    });

    it('bad parameters are 400 validation_error naming the field', async () => {
      const cases: [string, string, string][] = [
        ['per_page=101', 'per_page', 'maximum'],
        ['per_page=0', 'per_page', 'minimum'],
        ['page=0', 'page', 'minimum'],
        ['page=x', 'page', 'invalid'],
        ['sort=token_hash', 'sort', 'invalid'],
        ['order=random', 'order', 'invalid'],
        ['color=blue', 'color', 'unknown'],
      ];
      for (const [query, field, issue] of cases) {
        const res = await t.request({
          method: 'GET',
          url: `/v1/projects?${query}`,
          headers: user.headers,
        });
        assert.equal(res.statusCode, 400, query);
        const body = res.data as { error: { code: string; details: unknown } };
        assert.equal(body.error.code, 'validation_error');
        assert.deepEqual(body.error.details, [{ field, issue }], query);
      }
    });
  });
}
