import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hashToken } from '../../src/domains/identity/credentials.js';
import {
  MAX_ATTEMPTS,
  OutboxWorker,
  RETRY_BASE_MS,
  RETRY_MAX_MS,
} from '../../src/domains/mail/outbox-worker.js';
import { enqueueEmail } from '../../src/domains/mail/outbox.js';
import { DIALECTS } from '../support/db.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signUp, uniqueEmail } from '../support/users.js';
import { as, eventually } from '../support/http.js';
import { createProject, invite } from '../support/projects.js';
import { parseMail, startSmtpServer, type TestSmtpServer } from './smtp.js';

const FAST_POLL = { OUTBOX_POLL_MS: '20' };

for (const dialect of DIALECTS) {
  describe(`e-mail outbox (${dialect})`, () => {
    const outboxRow = (t: TestApp, id?: string) => {
      let query = t.testDb.db.kysely.selectFrom('outbox').selectAll();
      if (id) query = query.where('id', '=', id);
      return query.orderBy('created_at', 'desc').orderBy('id').executeTakeFirst();
    };

    describe('without SMTP_URL', () => {
      let t: TestApp;
      before(async () => {
        t = await startTestApp(dialect, { env: FAST_POLL });
      });
      after(async () => t.close());

      it('writes the invitation to $DATA_DIR/outbox/<id>.eml (0600), with a working link', async () => {
        const admin = await signUp(t);
        const project = await createProject(t, admin);
        const email = uniqueEmail('filed');
        const member = await invite(t, admin, project.id, email, 'developer');
        const row = await eventually(async () => {
          const r = await outboxRow(t);
          return r?.status === 'sent' ? r : undefined;
        }, 'the message marked sent');
        const file = join(t.config.dataDir, 'outbox', `${row.id}.eml`);
        assert.equal((await stat(file)).mode & 0o777, 0o600);
        const mail = parseMail(await readFile(file, 'utf8'));
        assert.match(mail.raw, new RegExp(`^To: ${email}`, 'mi'));
        const token = /\/invite\?token=([A-Za-z0-9_-]{43})/.exec(mail.text)?.[1];
        assert.ok(token, mail.text);
        const stored = await t.testDb.db.kysely
          .selectFrom('members')
          .select('invitation_token_hash')
          .where('id', '=', member.id)
          .executeTakeFirstOrThrow();
        assert.equal(hashToken(token), stored.invitation_token_hash);
        const user = await signUp(t, { email, invitationToken: token });
        const accepted = await as(t, user, 'POST', `/v1/invitations/${member.id}/accept`);
        assert.equal(accepted.statusCode, 200);
      });

      it('an invitation that fails writes no e-mail: the outbox row shares its transaction', async () => {
        const admin = await signUp(t);
        const project = await createProject(t, admin);
        const email = uniqueEmail();
        await invite(t, admin, project.id, email, 'viewer');
        const count = async () =>
          (await t.testDb.db.kysely.selectFrom('outbox').select('id').execute()).length;
        const before = await count();
        const res = await as(t, admin, 'POST', `/v1/projects/${project.id}/members`, {
          email,
          role: 'admin',
        });
        assert.equal(res.statusCode, 409);
        assert.equal(await count(), before);
      });
    });

    describe('over SMTP', () => {
      let smtp: TestSmtpServer;
      let t: TestApp;
      before(async () => {
        smtp = await startSmtpServer({ refuseFirst: 2 });
        t = await startTestApp(dialect, { env: { ...FAST_POLL, SMTP_URL: smtp.url } });
      });
      after(async () => {
        await t.close();
        await smtp.close();
      });

      it('retries a refused delivery with exponential backoff until it is accepted', async () => {
        const admin = await signUp(t);
        const project = await createProject(t, admin);
        const email = uniqueEmail('retry');
        await invite(t, admin, project.id, email, 'viewer');
        const attempted = (n: number) =>
          eventually(async () => {
            const r = await outboxRow(t);
            return r && r.attempts === n && r.locked_until === null ? r : undefined;
          }, `attempt ${n} recorded`);

        const first = await attempted(1);
        assert.equal(first.status, 'pending');
        assert.match(first.last_error ?? '', /451|Try again/);
        const now = t.clock.now().getTime();
        assert.equal(Date.parse(first.next_attempt_at), now + RETRY_BASE_MS);

        t.clock.advance(RETRY_BASE_MS);
        const second = await attempted(2);
        assert.equal(second.status, 'pending');
        assert.equal(Date.parse(second.next_attempt_at), now + RETRY_BASE_MS + 2 * RETRY_BASE_MS);

        t.clock.advance(2 * RETRY_BASE_MS);
        const third = await eventually(async () => {
          const r = await outboxRow(t, second.id);
          return r?.status === 'sent' ? r : undefined;
        }, 'delivery after the refusals');
        assert.equal(third.attempts, 3);
        assert.equal(third.last_error, null);
        assert.equal(smtp.refused, 2);
        assert.deepEqual(
          smtp.received.filter((m) => m.to.includes(email)).length,
          1,
          'delivered exactly once',
        );
      });

      it('several workers on one database deliver each message exactly once', async () => {
        const extra = [1, 2].map(() => new OutboxWorker({ ...t, db: t.testDb.db, log: t.app.log }));
        const db = t.testDb.db.kysely;
        const subjects = Array.from({ length: 12 }, (_, i) => `concurrent ${dialect} ${i}`);
        const to = uniqueEmail('many');
        for (const subject of subjects) {
          await enqueueEmail(
            db,
            { to, subject, text: subject, html: `<p>${subject}</p>` },
            t.clock.now(),
          );
        }
        // The app's own worker is polling too: three workers race for the same rows.
        await Promise.all(extra.map((w) => w.deliverDue()));
        // Done when every row is marked sent (a worker may still be between SMTP and its update).
        const rows = await eventually(async () => {
          const all = await db
            .selectFrom('outbox')
            .selectAll()
            .where('payload', 'like', `%${to}%`)
            .execute();
          return all.length === subjects.length && all.every((r) => r.status === 'sent')
            ? all
            : undefined;
        }, 'every message marked sent');
        await Promise.all(extra.map((w) => w.stop()));
        const got = smtp.received.filter((m) => m.to.includes(to)).map((m) => m.subject);
        assert.deepEqual([...got].sort(), [...subjects].sort(), 'each exactly once');
        assert.ok(
          rows.every((r) => r.attempts === 1),
          'each claimed once',
        );
      });
    });

    describe('with an unreachable SMTP server', () => {
      let t: TestApp;
      before(async () => {
        // A port nothing listens on: every attempt fails to connect.
        const closed = await startSmtpServer();
        const url = closed.url;
        await closed.close();
        t = await startTestApp(dialect, { env: { ...FAST_POLL, SMTP_URL: url } });
      });
      after(async () => t.close());

      it(`gives up after ${MAX_ATTEMPTS} attempts and marks the message failed`, async () => {
        const admin = await signUp(t);
        const project = await createProject(t, admin);
        await invite(t, admin, project.id, uniqueEmail('lost'), 'viewer');
        for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
          const row = await eventually(async () => {
            const r = await outboxRow(t);
            return r && r.attempts === attempt && r.locked_until === null ? r : undefined;
          }, `attempt ${attempt}`);
          assert.ok(row.last_error, 'the failure is recorded');
          if (attempt < MAX_ATTEMPTS) {
            assert.equal(row.status, 'pending');
            t.clock.advance(RETRY_MAX_MS);
          } else {
            assert.equal(row.status, 'failed');
          }
        }
        t.clock.advance(RETRY_MAX_MS);
        const worker = new OutboxWorker({ ...t, db: t.testDb.db, log: t.app.log });
        assert.equal(await worker.deliverDue(), 0, 'a failed message is not picked up again');
        await worker.stop();
        const row = await outboxRow(t);
        assert.deepEqual(
          [row?.status, row?.attempts],
          ['failed', MAX_ATTEMPTS],
          'no more attempts',
        );
      });
    });
  });
}
