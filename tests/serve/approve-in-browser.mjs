// Approve or deny a `lobster serve` approval link in a real browser:
//
//   NODE_PATH=$(bash tests/serve/setup-browser.sh) \
//     node tests/serve/approve-in-browser.mjs URL approve|deny
//
// Loads the approval page (GET /a/{link}) in headless Chromium, checks the
// page has the shape docs and SERVE-CONTRACT fix — a <form method="post"
// action="/a/{link}"> with <button type="submit" name="decision"
// value="approve"> and value="deny", and no JavaScript — clicks the chosen
// button, waits for the result page and prints its <h1> text on stdout.
//
// When the page asks the approver to sign in first (a <form
// action="/a/{link}/sign-in"> with inputs name and secret), the harness
// types $LOBSTER_APPROVER_NAME and $LOBSTER_APPROVER_SECRET into it, submits,
// and goes on with the gate page the server returns (its session cookie is
// in the browser's profile, as for a human). Without those variables a
// sign-in page fails the run.
//
// Exit codes: 0 done (the <h1> is on stdout); 3 Chromium is missing (a
// caller may skip, loudly); 1 anything else, with the reason on stderr (a
// page that is not 200, a missing form or button, a timeout, ...).
//
// The browser is Debian's chromium at /usr/bin/chromium (or
// $LOBSTER_CHROMIUM); playwright-core comes from setup-browser.sh. Each run
// uses a fresh profile directory, removed afterwards.
// $LOBSTER_BROWSER_TIMEOUT_MS bounds each step (default 30000).

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

class Failure extends Error {}

function fail(message) {
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

async function heading(page) {
  const h1 = page.locator('h1').first();
  return (await h1.count()) ? (await h1.textContent()).trim() : '(no <h1>)';
}

async function main() {
  const [url, decision] = process.argv.slice(2);
  if (!url || !['approve', 'deny'].includes(decision)) {
    fail('usage: node approve-in-browser.mjs URL approve|deny');
  }
  let target;
  try {
    target = new URL(url);
  } catch {
    fail(`not a URL: ${url}`);
  }
  const executablePath = process.env.LOBSTER_CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    process.stderr.write(
      `\n*** chromium not found at ${executablePath}: the browser check of the approval page ` +
      'cannot run. Install it with `apt-get install -y chromium` (Debian) or set ' +
      'LOBSTER_CHROMIUM. ***\n\n');
    return 3;
  }
  // Generous: CI runs this beside every other test binary on two cores, where
  // Chromium's first start has been seen to take more than 30 s.
  const timeout = Number(process.env.LOBSTER_BROWSER_TIMEOUT_MS || 90000);
  const { chromium } = loadPlaywright();
  const profile = mkdtempSync(join(tmpdir(), 'lobster-browser-'));
  let context;
  try {
    // Playwright passes the profile as --user-data-dir itself. A launch that
    // times out is tried once more (a loaded machine, not a page fault); any
    // other launch error is reported at once.
    for (let attempt = 1; ; attempt++) {
      try {
        context = await chromium.launchPersistentContext(profile, {
          executablePath,
          headless: true,
          args: FLAGS,
          timeout,
        });
        break;
      } catch (e) {
        if (attempt >= 2 || !/Timeout/.test(String(e && e.message))) throw e;
        process.stderr.write(`approve-in-browser: launching chromium timed out after ${timeout} ms; trying once more\n`);
      }
    }
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(timeout);
    let shown = await page.goto(url, { waitUntil: 'load' });
    if (!shown || shown.status() !== 200) {
      fail(`the approval page answered ${shown ? shown.status() : 'nothing'}: ${await heading(page)}`);
    }
    const signIn = page.locator(`form[action="${target.pathname}/sign-in"]`);
    if ((await signIn.count()) === 1) {
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
      [shown] = await Promise.all([
        page.waitForNavigation({ waitUntil: 'load' }),
        signIn.locator('button[type="submit"]').click(),
      ]);
      if (!shown || shown.status() !== 200) {
        fail(`signing in answered ${shown ? shown.status() : 'nothing'}: ${await heading(page)}`);
      }
    }
    const forms = page.locator(`form[action="${target.pathname}"]`);
    if ((await forms.count()) !== 1) {
      fail(`the approval page has no single <form action="${target.pathname}">`);
    }
    const form = forms.first();
    if (((await form.getAttribute('method')) || '').toLowerCase() !== 'post') {
      fail('the approval form is not method="post"');
    }
    for (const value of ['approve', 'deny']) {
      const n = await form.locator(`button[type="submit"][name="decision"][value="${value}"]`).count();
      if (n !== 1) {
        fail(`the approval form has ${n} <button type="submit" name="decision" value="${value}">`);
      }
    }
    if ((await page.locator('script').count()) !== 0) {
      fail('the approval page carries <script>: it must work without JavaScript');
    }
    const button = form.locator(`button[name="decision"][value="${decision}"]`);
    const [answer] = await Promise.all([
      page.waitForNavigation({ waitUntil: 'load' }),
      button.click(),
    ]);
    const h1 = await heading(page);
    if (!answer || answer.status() !== 200) {
      fail(`the result page answered ${answer ? answer.status() : 'nothing'}: ${h1}`);
    }
    process.stdout.write(`${h1}\n`);
    return 0;
  } finally {
    if (context) await context.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    const reason = e instanceof Failure ? e.message : (e && e.stack) || String(e);
    process.stderr.write(`approve-in-browser: ${reason}\n`);
    process.exit(1);
  },
);
