// Read a `lobster serve` approval page and the run page it links to in a
// real browser:
//
//   NODE_PATH=$(bash tests/serve/setup-browser.sh) \
//     node tests/serve/run-page-in-browser.mjs APPROVAL_URL SCREENSHOT_DIR
//
// Loads the approval page (GET /a/{link}) in headless Chromium, signs the
// approver in where the page asks for it ($LOBSTER_APPROVER_NAME and
// $LOBSTER_APPROVER_SECRET typed into its form, as approve-in-browser.mjs
// does; the session cookie stays in the browser's profile), and prints,
// one JSON line on stdout, what a human sees there: the workflow and the
// gate's step, the items table's header and row count, whether the raw
// JSON sits behind a closed <details>, the steps after the gate; then
// follows the "run so far" link without deciding anything and adds the run
// page's <h1>, its timeline rows (event kinds) and its gates list. Both
// pages must carry no <script>. Screenshots of both pages go to
// SCREENSHOT_DIR (approval.png, run.png), kept as test artefacts.
//
// Exit codes: 0 done; 3 Chromium is missing (a caller may skip, loudly);
// 1 anything else, with the reason on stderr.
//
// Chromium's first start on a loaded machine (CI: 2 cores, tests running
// beside it) can take far longer than a page does: the launch gets its own
// timeout ($LOBSTER_BROWSER_LAUNCH_TIMEOUT_MS, default 120000) and one
// retry with a fresh profile when it times out (browser.mjs).

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  chromiumMissing, fail, launch, runHarness, signInIfAsked,
} from './browser.mjs';

async function text(page, selector) {
  const l = page.locator(selector);
  return (await l.count()) ? (await l.first().textContent()).trim() : null;
}

async function main() {
  const [url, shots] = process.argv.slice(2);
  if (!url || !shots) fail('usage: node run-page-in-browser.mjs APPROVAL_URL SCREENSHOT_DIR');
  if (chromiumMissing()) return 3;
  mkdirSync(shots, { recursive: true });
  const timeout = Number(process.env.LOBSTER_BROWSER_TIMEOUT_MS || 60000);
  const launchTimeout = Number(process.env.LOBSTER_BROWSER_LAUNCH_TIMEOUT_MS || 120000);
  const browser = await launch({
    timeout: launchTimeout,
    viewport: { width: 1000, height: 1200 },
    who: 'run-page-in-browser',
  });
  try {
    const page = browser.context.pages()[0] || (await browser.context.newPage());
    page.setDefaultTimeout(timeout);
    const shown = await page.goto(url, { waitUntil: 'load' });
    if (!shown || shown.status() !== 200) {
      fail(`the approval page answered ${shown ? shown.status() : 'nothing'}`);
    }
    const signedIn = await signInIfAsked(page, new URL(url).pathname);
    if ((await page.locator('script').count()) !== 0) fail('the approval page carries <script>');
    const out = {
      signedIn,
      workflow: await text(page, '#workflow'),
      gateStep: await text(page, '#step'),
      itemColumns: await page.locator('table#items thead th').allTextContents(),
      itemRows: await page.locator('table#items tbody tr').count(),
      rawHidden: !(await page.locator('#preview').isVisible()),
      stepsAfter: (await page.locator('#capabilities > li > b').allTextContents()),
    };
    await page.screenshot({ path: join(shots, 'approval.png'), fullPage: true });
    const link = page.locator('a#run-page');
    if ((await link.count()) !== 1) fail('the approval page has no link to the run page');
    const [answer] = await Promise.all([
      page.waitForNavigation({ waitUntil: 'load' }),
      link.click(),
    ]);
    if (!answer || answer.status() !== 200) {
      fail(`the run page answered ${answer ? answer.status() : 'nothing'}`);
    }
    if ((await page.locator('script').count()) !== 0) fail('the run page carries <script>');
    out.runHeading = await text(page, 'h1');
    out.chain = await text(page, '#chain');
    out.timeline = (await page.locator('table#timeline tbody tr td:nth-child(2)').allTextContents());
    out.gates = (await page.locator('#gates li').allTextContents()).map((s) => s.trim());
    await page.screenshot({ path: join(shots, 'run.png'), fullPage: true });
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  } finally {
    await browser.close();
  }
}

runHarness('run-page-in-browser', main);
