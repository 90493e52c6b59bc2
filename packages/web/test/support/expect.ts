// A small retrying `expect` for locators (playwright-core has no test runner
// and so no web-first assertions): each matcher polls until it holds or the
// timeout passes, then fails with what it last saw.
import type { Locator, Page } from 'playwright-core';

export type { Locator, Page };

const DEFAULT_TIMEOUT = 15_000;

async function poll(
  describe: string,
  check: () => Promise<{ ok: boolean; saw: unknown }>,
  timeout = DEFAULT_TIMEOUT,
): Promise<void> {
  const deadline = Date.now() + timeout;
  let saw: unknown = undefined;
  for (let wait = 25; ; wait = Math.min(wait * 2, 250)) {
    try {
      const result = await check();
      if (result.ok) return;
      saw = result.saw;
    } catch (error) {
      saw = (error as Error).message.split('\n')[0];
    }
    if (Date.now() > deadline)
      throw new Error(
        `expected ${describe} within ${timeout} ms; last saw: ${JSON.stringify(saw)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

interface Options {
  timeout?: number;
}

export function expect(locator: Locator) {
  const name = String(locator);
  return {
    toBeVisible: (o: Options = {}) =>
      locator.first().waitFor({ state: 'visible', timeout: o.timeout ?? DEFAULT_TIMEOUT }),
    toBeHidden: async (o: Options = {}) =>
      poll(
        `${name} to be hidden`,
        async () => {
          const visible = await Promise.all((await locator.all()).map((l) => l.isVisible()));
          return { ok: !visible.includes(true), saw: `${visible.length} matching` };
        },
        o.timeout,
      ),
    toBeEnabled: (o: Options = {}) =>
      poll(
        `${name} to be enabled`,
        async () => ({ ok: await locator.isEnabled(), saw: 'disabled' }),
        o.timeout,
      ),
    toBeDisabled: (o: Options = {}) =>
      poll(
        `${name} to be disabled`,
        async () => ({ ok: await locator.isDisabled(), saw: 'enabled' }),
        o.timeout,
      ),
    toBeFocused: (o: Options = {}) =>
      poll(
        `${name} to be focused`,
        async () => {
          const focused = await locator.evaluate((el) => el === document.activeElement);
          const active = await locator
            .page()
            .evaluate(
              () =>
                document.activeElement?.getAttribute('aria-label') ??
                document.activeElement?.tagName,
            );
          return { ok: focused, saw: active };
        },
        o.timeout,
      ),
    toHaveText: (expected: string | RegExp, o: Options = {}) =>
      poll(
        `${name} to have text ${String(expected)}`,
        async () => {
          const text = ((await locator.textContent()) ?? '').trim();
          return {
            ok: typeof expected === 'string' ? text === expected : expected.test(text),
            saw: text,
          };
        },
        o.timeout,
      ),
    toContainText: (expected: string | RegExp, o: Options = {}) =>
      poll(
        `${name} to contain ${String(expected)}`,
        async () => {
          const text = (await locator.textContent()) ?? '';
          return {
            ok: typeof expected === 'string' ? text.includes(expected) : expected.test(text),
            saw: text,
          };
        },
        o.timeout,
      ),
    toHaveValue: (expected: string, o: Options = {}) =>
      poll(
        `${name} to have value ${expected}`,
        async () => {
          const value = await locator.inputValue();
          return { ok: value === expected, saw: value };
        },
        o.timeout,
      ),
    toHaveAttribute: (attribute: string, expected: string, o: Options = {}) =>
      poll(
        `${name} to have ${attribute}=${expected}`,
        async () => {
          const value = await locator.getAttribute(attribute);
          return { ok: value === expected, saw: value };
        },
        o.timeout,
      ),
    toHaveCount: (expected: number, o: Options = {}) =>
      poll(
        `${name} to match ${expected} elements`,
        async () => {
          const count = await locator.count();
          return { ok: count === expected, saw: count };
        },
        o.timeout,
      ),
  };
}

/** Polls a page-level condition (a URL, a value read through the SDK). */
export async function eventually<T>(
  describe: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeout = DEFAULT_TIMEOUT,
): Promise<T> {
  let last: T | undefined;
  await poll(
    describe,
    async () => {
      last = await read();
      return { ok: ok(last), saw: last };
    },
    timeout,
  );
  return last!;
}

/** The page's title, once it is `expected` (a title follows the screen's render, not its URL). */
export async function expectTitle(page: Page, expected: string, o: Options = {}): Promise<void> {
  await poll(
    `the page's title to be ${expected}`,
    async () => {
      const title = await page.title();
      return { ok: title === expected, saw: title };
    },
    o.timeout,
  );
}
