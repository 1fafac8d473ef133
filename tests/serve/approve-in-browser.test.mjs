// approve-in-browser.mjs in a real headless Chromium against a stand-in of
// the approval page (the shape SERVE-CONTRACT fixes: a no-JavaScript form
// posting decision=approve|deny to /a/{link}, a result page whose <h1> says
// Approved or Denied, 410 for a spent link). The stand-in records what the
// browser sent. Run by tests/run.sh after setup-browser.sh; without
// /usr/bin/chromium the browser cases skip with a loud message.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const harness = fileURLToPath(new URL('./approve-in-browser.mjs', import.meta.url));
const chromium = process.env.LOBSTER_CHROMIUM || '/usr/bin/chromium';
const noBrowser = existsSync(chromium)
  ? false
  : `*** SKIPPED: chromium not found at ${chromium} (apt-get install -y chromium) ***`;
if (noBrowser) process.stderr.write(`\n${noBrowser}\n\n`);

const page = (link, { deny = true, script = false } = {}) => `<!doctype html>
<html><head><title>Approval</title></head><body>
<h1>Approval needed</h1><p>Send 3 emails?</p>
<form method="post" action="/a/${link}">
<button type="submit" name="decision" value="approve">Approve</button>
${deny ? '<button type="submit" name="decision" value="deny">Deny</button>' : ''}
</form>${script ? '<script>1</script>' : ''}</body></html>`;

// The stand-in: /a/good-* links are live once, /a/nodeny lacks Deny,
// /a/script carries a script, anything else is a spent link (410).
async function standIn() {
  const seen = [];
  const spent = new Set();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], body });
      const link = req.url.replace(/^\/a\//, '');
      const html = (status, text) => {
        res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
        res.end(text);
      };
      if (!req.url.startsWith('/a/') || spent.has(link)) {
        return html(410, '<h1>This link was already used</h1>');
      }
      if (req.method === 'GET') {
        return html(200, page(link, { deny: link !== 'nodeny', script: link === 'script' }));
      }
      spent.add(link);
      const decision = new URLSearchParams(body).get('decision');
      if (decision === 'approve') return html(200, '<h1>Approved</h1>');
      if (decision === 'deny') return html(200, '<h1>Denied</h1>');
      return html(400, '<h1>Bad decision</h1>');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, seen, close: () => new Promise((r) => server.close(r)) };
}

function run(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [harness, ...args], {
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('approve: a real click posts decision=approve and prints the <h1>', { skip: noBrowser }, async () => {
  const s = await standIn();
  try {
    const r = await run([`${s.base}/a/good-1`, 'approve']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Approved\n');
    const post = s.seen.find((x) => x.method === 'POST');
    assert.equal(post.url, '/a/good-1');
    assert.equal(post.type, 'application/x-www-form-urlencoded');
    assert.equal(post.body, 'decision=approve');
    // The link is spent now: a second click is refused with the page's reason.
    const again = await run([`${s.base}/a/good-1`, 'approve']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /answered 410: This link was already used/);
  } finally {
    await s.close();
  }
});

test('deny: a real click posts decision=deny', { skip: noBrowser }, async () => {
  const s = await standIn();
  try {
    const r = await run([`${s.base}/a/good-2`, 'deny']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Denied\n');
    assert.equal(s.seen.find((x) => x.method === 'POST').body, 'decision=deny');
  } finally {
    await s.close();
  }
});

test('a page off the contract fails with the reason', { skip: noBrowser }, async () => {
  const s = await standIn();
  try {
    const noDeny = await run([`${s.base}/a/nodeny`, 'approve']);
    assert.equal(noDeny.code, 1);
    assert.match(noDeny.stderr, /0 <button type="submit" name="decision" value="deny">/);
    const script = await run([`${s.base}/a/script`, 'approve']);
    assert.equal(script.code, 1);
    assert.match(script.stderr, /must work without JavaScript/);
    // Neither was clicked.
    assert.equal(s.seen.filter((x) => x.method === 'POST').length, 0);
  } finally {
    await s.close();
  }
});

test('a missing chromium exits 3 with a loud message', async () => {
  const r = await run(['http://127.0.0.1:9/a/x', 'approve'], { LOBSTER_CHROMIUM: '/nonexistent/chromium' });
  assert.equal(r.code, 3);
  assert.match(r.stderr, /chromium not found at \/nonexistent\/chromium/);
});

test('bad arguments exit 1 with the usage', async () => {
  const r = await run(['http://127.0.0.1:9/a/x', 'maybe']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /usage: node approve-in-browser.mjs URL approve\|deny/);
});
