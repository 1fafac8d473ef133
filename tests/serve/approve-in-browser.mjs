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
// $LOBSTER_BROWSER_TIMEOUT_MS bounds each step, the launch included
// (default 90000; a launch that times out is tried once more: browser.mjs).

import {
  chromiumMissing, fail, heading, launch, runHarness, signInIfAsked,
} from './browser.mjs';

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
  if (chromiumMissing()) return 3;
  // Generous: CI runs this beside every other test binary on two cores, where
  // Chromium's first start has been seen to take more than 30 s.
  const timeout = Number(process.env.LOBSTER_BROWSER_TIMEOUT_MS || 90000);
  const browser = await launch({ timeout, who: 'approve-in-browser' });
  try {
    const page = browser.context.pages()[0] || (await browser.context.newPage());
    page.setDefaultTimeout(timeout);
    const shown = await page.goto(url, { waitUntil: 'load' });
    if (!shown || shown.status() !== 200) {
      fail(`the approval page answered ${shown ? shown.status() : 'nothing'}: ${await heading(page)}`);
    }
    await signInIfAsked(page, target.pathname);
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
    await browser.close();
  }
}

runHarness('approve-in-browser', main);
