// The Webhooks tab in a real Chromium against a REAL server process: an admin
// registers a webhook to a local receiver (allowed by the operator switches),
// copies its signing secret (shown once), sends a test event that the receiver
// verifies with the reference Standard Webhooks implementation, reads the
// delivery log, and sees a loopback URL refused with the server's reason on a
// server without the switches. A developer has no Webhooks tab.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import {
  Visitor,
  hasChromium,
  launchBrowser,
  serviceMissing,
  startCoffer,
  type Coffer,
  CHROMIUM_MISSING,
} from './support/browser.js';
import { expect } from './support/expect.js';
import { createProject, newAccount, signUp } from './support/flows.js';
import {
  adminPage,
  adminScreenshots,
  assertAdminAccessible,
  bodyRows,
  openTab,
  watched,
} from './support/admin.js';
import { startReceiver, type Receiver } from '../../server/test/webhooks/receiver.js';

let browser: Browser | undefined;
let coffer: Coffer | undefined;
let strict: Coffer | undefined;
let receiver: Receiver | undefined;
const visitors: Visitor[] = [];

before(async () => {
  if (!hasChromium()) return;
  [coffer, strict, browser, receiver] = await Promise.all([
    startCoffer({
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_ALLOW_HTTP: 'true',
      OUTBOX_POLL_MS: '100',
    }),
    startCoffer(),
    launchBrowser(),
    startReceiver(),
  ]);
});
after(async () => {
  for (const visitor of visitors) await visitor.close().catch(() => undefined);
  await browser?.close();
  await coffer?.stop();
  await strict?.stop();
  await receiver?.close();
});

test('an admin registers a webhook, copies its secret once, sends a test event and reads the log', async (t) => {
  if (!browser || !coffer || !receiver) return serviceMissing(t, CHROMIUM_MISSING);
  const visitor = await Visitor.open(browser, coffer, {
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  visitors.push(visitor);
  const admin = newAccount('hooks');
  visitor.secret(admin.password);
  const { page } = visitor;
  await watched(visitor, 'webhooks', async () => {
    await signUp(visitor, admin);
    await createProject(page, 'Deploys');
    await openTab(page, 'Webhooks');
    await expect(page.getByText('No webhooks yet.')).toBeVisible();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('URL', { exact: true }).fill(receiver!.url);
    await form.getByLabel('Description').fill('Redeploy production');
    await form.getByLabel('production').check();
    await form.getByLabel('secrets.changed').check();
    await adminPage(page, 'webhook-form');
    await form.getByRole('button', { name: 'Create' }).click();

    const shown = page.getByRole('dialog', { name: 'Your new webhook’s signing secret' });
    await expect(shown).toContainText('only once');
    const secret = ((await shown.getByLabel('Signing secret').textContent()) ?? '').trim();
    assert.match(secret, /^whsec_/);
    visitor.secret(secret);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await expect(shown.getByRole('button', { name: 'Copied' })).toBeVisible();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    await adminPage(page, 'webhook-secret');
    await shown.getByRole('button', { name: 'Done' }).click();

    const rows = bodyRows(page);
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toContainText(receiver!.url);
    await expect(rows.first()).toContainText('secrets.changed');
    await expect(rows.first()).toContainText('in production');
    assert.ok(!(await page.content()).includes(secret), 'the secret is not on the page any more');

    await page.getByRole('button', { name: `Send a test event to ${receiver!.url}` }).click();
    const log = page.getByRole('region', { name: `Deliveries to ${receiver!.url}` });
    await expect(log.getByRole('row').filter({ hasText: 'webhook.test' })).toContainText(
      'delivered',
    );
    await expect(log).toContainText('200');
    const request = receiver!.received.at(-1)!;
    const event = new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    }) as { type: string };
    assert.equal(event.type, 'webhook.test');
    await adminPage(page, 'webhooks');
    await page.emulateMedia({ colorScheme: 'dark' });
    await adminScreenshots(page, 'webhooks-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    await page.getByRole('button', { name: `Disable ${receiver!.url}` }).click();
    await expect(rows.first()).toContainText('disabled');
    await page.getByRole('button', { name: `Delete ${receiver!.url}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect(page.getByText('No webhooks yet.')).toBeVisible();
  });
});

test('a loopback URL is refused with the reason, on a server that does not allow it', async (t) => {
  if (!browser || !strict) return serviceMissing(t, CHROMIUM_MISSING);
  const visitor = await Visitor.open(browser, strict);
  visitors.push(visitor);
  const admin = newAccount('strict');
  visitor.secret(admin.password);
  const { page } = visitor;
  await watched(visitor, 'webhook-refused', async () => {
    await signUp(visitor, admin);
    await createProject(page, 'Strict');
    await openTab(page, 'Webhooks');
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('URL', { exact: true }).fill('https://127.0.0.1:9000/hook');
    await form.getByRole('button', { name: 'Create' }).click();
    await expect(form).toContainText('loopback address');
    await expect(form).toContainText('WEBHOOK_ALLOW_PRIVATE');
    await adminPage(page, 'webhook-refused');
  });
});

test('webhook pages: no serious or critical accessibility findings', (t) => {
  if (!browser) return serviceMissing(t, CHROMIUM_MISSING);
  assertAdminAccessible(t);
});
