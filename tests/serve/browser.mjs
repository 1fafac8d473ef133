// What the browser harnesses of `lobster serve`'s pages share
// (approve-in-browser.mjs, run-page-in-browser.mjs): Chromium's flags,
// loading playwright-core, a launch that survives a slow first start, the
// approver's sign-in form, and the exit protocol (0 done, 3 Chromium
// missing, 1 anything else with the reason on stderr).

import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A refusal the harness explains in one line (not a stack). */
export class Failure extends Error {}

/** Stop the harness with `message` on stderr and exit code 1. */
export function fail(message) {
  throw new Failure(message);
}

// playwright-core through NODE_PATH (ES imports ignore it, require does),
// else from target/browser-tools/ next to this checkout.
function loadPlaywright() {
  const require = createRequire(import.meta.url);
  try {
    return require('playwright-core');
  } catch {
    const local = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'target',
      'browser-tools', 'node_modules', 'playwright-core');
    try {
      return require(local);
    } catch {
      fail('playwright-core not found: run `bash tests/serve/setup-browser.sh` and pass the ' +
        'NODE_PATH it prints');
    }
  }
}

/** The browser: Debian's chromium at /usr/bin/chromium or $LOBSTER_CHROMIUM. */
export function chromiumPath() {
  return process.env.LOBSTER_CHROMIUM || '/usr/bin/chromium';
}

/**
 * Headless Chromium in a fresh profile (removed by `close`). Chromium's first
 * start on a loaded machine (CI: 2 cores, every test binary beside it) can
 * take far longer than a page does, so a launch that times out after
 * `timeout` ms is tried once more, with a fresh profile; any other launch
 * error is reported at once. `who` names the harness in that message.
 */
export async function launch({ timeout, viewport, who }) {
  const { chromium } = loadPlaywright();
  const profiles = [];
  const close = async (context) => {
    if (context) await context.close().catch(() => {});
    for (const p of profiles) rmSync(p, { recursive: true, force: true });
  };
  for (let attempt = 1; ; attempt++) {
    const profile = mkdtempSync(join(tmpdir(), 'lobster-browser-'));
    profiles.push(profile);
    try {
      // Playwright passes the profile as --user-data-dir itself.
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: chromiumPath(),
        headless: true,
        args: FLAGS,
        timeout,
        ...(viewport ? { viewport } : {}),
      });
      return { context, close: () => close(context) };
    } catch (e) {
      const timedOut = e && (e.name === 'TimeoutError' || /Timeout/.test(String(e.message)));
      if (attempt >= 2 || !timedOut) {
        await close(null);
        throw e;
      }
      process.stderr.write(`${who}: Chromium did not start within ${timeout} ms; trying once more\n`);
    }
  }
}

/** The page's first <h1>, or `(no <h1>)`. */
export async function heading(page) {
  const h1 = page.locator('h1').first();
  return (await h1.count()) ? (await h1.textContent()).trim() : '(no <h1>)';
}

/**
 * When the page at `pathname` asks an approver to sign in (a <form
 * action="PATHNAME/sign-in"> with inputs name and secret), type
 * $LOBSTER_APPROVER_NAME and $LOBSTER_APPROVER_SECRET into it and submit;
 * the session cookie stays in the browser's profile, as for a human.
 * Without those variables a sign-in page fails the run. Returns whether it
 * signed in (a sign-in that does not end on a 200 page fails the run).
 */
export async function signInIfAsked(page, pathname) {
  const signIn = page.locator(`form[action="${pathname}/sign-in"]`);
  if ((await signIn.count()) !== 1) return false;
  const name = process.env.LOBSTER_APPROVER_NAME;
  const secret = process.env.LOBSTER_APPROVER_SECRET;
  if (!name || !secret) {
    fail('the page asks an approver to sign in; set LOBSTER_APPROVER_NAME and LOBSTER_APPROVER_SECRET');
  }
  if ((await page.locator('script').count()) !== 0) {
    fail('the sign-in page carries <script>: it must work without JavaScript');
  }
  await signIn.locator('input[name="name"]').fill(name);
  await signIn.locator('input[name="secret"]').fill(secret);
  const [after] = await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    signIn.locator('button[type="submit"]').click(),
  ]);
  if (!after || after.status() !== 200) {
    fail(`signing in answered ${after ? after.status() : 'nothing'}: ${await heading(page)}`);
  }
  return true;
}

/** Exit 3 (a caller may skip, loudly) when Chromium is not installed. */
export function chromiumMissing() {
  if (existsSync(chromiumPath())) return false;
  process.stderr.write(
    `\n*** chromium not found at ${chromiumPath()}: the browser check of the approval page ` +
    'cannot run. Install it with `apt-get install -y chromium` (Debian) or set ' +
    'LOBSTER_CHROMIUM. ***\n\n');
  return true;
}

/** Run `main` and exit with its code, or 1 and the reason on stderr. */
export function runHarness(who, main) {
  main().then(
    (code) => process.exit(code),
    (e) => {
      const reason = e instanceof Failure ? e.message : (e && e.stack) || String(e);
      process.stderr.write(`${who}: ${reason}\n`);
      process.exit(1);
    },
  );
}
