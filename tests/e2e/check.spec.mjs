// The offline check: SHA-256 per file against pasted expected hashes, the NaN/Inf scan, the
// exported report equal byte for byte to `tensorscope check --sha256 --scan --expect --json`,
// progress with bytes/s and cancel on a 3 GiB file, and not one network request for local files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serveDist, launch, REPO } from './helpers.mjs';
import { Viewer, tempDir, safetensors, makeBig } from './viewer.mjs';

let srv;
let browser;
let tmp;
let cli;
before(async () => {
  srv = await serveDist();
  browser = await launch();
  tmp = tempDir();
  // The CLI this report must equal (built if missing or stale; quick when up to date).
  execFileSync('cargo', ['build', '--quiet', '--bin', 'tensorscope'], { cwd: REPO, stdio: 'inherit' });
  cli = path.join(process.env.CARGO_TARGET_DIR ?? path.join(REPO, 'target'), 'debug', 'tensorscope');
});
after(async () => {
  await browser?.close();
  await srv?.close();
  tmp?.cleanup();
});

const f32 = (vals) => Buffer.from(new Float32Array(vals).buffer);

/** Record every http(s) request the browser context makes from now on. */
function recordRequests(context) {
  const seen = [];
  const on = (r) => {
    if (/^https?:/.test(r.url())) seen.push(`${r.method()} ${r.url()}`);
  };
  context.on('request', on);
  return { seen, stop: () => context.off('request', on) };
}

async function waitReady(page) {
  await page.evaluate(() => navigator.serviceWorker?.ready.then(() => true));
}

test('hashes, scans and compares local files with no network request; the export equals the CLI', async () => {
  const { page, context } = browser;
  const file = path.join(tmp.dir, 'nan.safetensors');
  fs.writeFileSync(
    file,
    safetensors(
      [
        { name: 'clean', dtype: 'F32', shape: [4], bytes: f32([1, 2, 3, 4]) },
        { name: 'dirty', dtype: 'F32', shape: [5], bytes: f32([1, NaN, Infinity, -Infinity, NaN]) },
        { name: 'half', dtype: 'F16', shape: [2], bytes: Buffer.from([0x00, 0x7e, 0x00, 0x3c]) },
      ],
      { format: 'pt' },
    ),
  );
  const digest = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  const sums = `${digest}  nan.safetensors\n`;
  fs.writeFileSync(path.join(tmp.dir, 'SHA256SUMS'), sums);

  const v = new Viewer(page, srv.url);
  await v.open();
  await waitReady(page);
  const net = recordRequests(context);
  await v.pick(file);
  await v.waitLoaded('nan.safetensors');
  await v.tab('check');
  await page.locator('[data-testid=check-scan]').check();
  await page.locator('[data-testid=expected-input]').fill(sums);
  await page.locator('[data-testid=check-run]').click();
  await page.locator('[data-testid=check-done]').waitFor({ timeout: 30_000 });
  const workers = Number(await page.locator('[data-testid=check-done]').getAttribute('data-workers'));
  assert.ok(workers >= 1, `hashed and scanned in ${workers} workers`);
  assert.equal(await v.text('check-sha'), digest);
  assert.equal(await v.text('check-status'), 'match');
  assert.match(await v.text('scan-summary'), /^3 tensors scanned \(11 values\): 2 hold NaN/);
  const bad = await page.locator('[data-testid=scan-bad]').evaluateAll((els) => els.map((e) => e.dataset.name));
  assert.deepEqual(bad, ['dirty', 'half']);
  const codes = await page.locator('[data-testid=check-code]').allTextContents();
  assert.ok(codes.includes('check.sha256_match') && codes.includes('check.non_finite_values'), `${codes}`);

  const download = page.waitForEvent('download');
  await page.locator('[data-testid=check-export]').click();
  const text = fs.readFileSync(await (await download).path(), 'utf8');
  let out = '';
  try {
    out = execFileSync(cli, ['check', 'nan.safetensors', '--sha256', '--scan', '--expect', 'SHA256SUMS', '--json'], {
      cwd: tmp.dir,
      encoding: 'utf8',
    });
  } catch (e) {
    out = e.stdout; // exit status 1: an error-level finding is fine here
  }
  assert.equal(text, out, 'the browser report equals the CLI report byte for byte');
  net.stop();
  // The worker pool loads the workers' own script and wasm (from the service worker's cache
  // when offline); nothing else goes out: no byte of the files.
  const workerFiles = ['worker.js', 'tensorscope-worker.js', 'tensorscope-worker_bg.wasm'];
  const own = new Set([...workerFiles, 'tensorscope-web.js', 'tensorscope-web_bg.wasm'].map((f) => `GET ${new URL(f, srv.url).href}`));
  assert.ok(net.seen.some((r) => r.endsWith('/tensorscope-worker_bg.wasm')), 'the check ran in workers, on their own wasm');
  assert.deepEqual(net.seen.filter((r) => !own.has(r)), [], 'local files: no network request but the viewer itself');

  // A wrong hash, pasted as the Hub shows it, is a mismatch (and the report says so).
  await page.locator('[data-testid=expected-input]').fill(`SHA256: ${'0'.repeat(64)}`);
  assert.equal(await v.text('check-status'), 'mismatch');
  assert.ok((await page.locator('[data-testid=check-code]').allTextContents()).includes('check.sha256_mismatch'));
  assert.deepEqual(browser.errors, []);
});

test('hashing a 3 GiB file shows progress and bytes/s, and cancels', async () => {
  const { page } = browser;
  const file = path.join(tmp.dir, 'big.safetensors');
  makeBig(file);
  const v = new Viewer(page, srv.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('big.safetensors');
  await v.tab('check');
  await page.locator('[data-testid=check-run]').click();
  await page.locator('[data-testid=check-job] [data-testid=progress]').waitFor();
  await page.waitForFunction(() => /\/s$/.test(document.querySelector('[data-testid=check-rate]')?.textContent ?? ''));
  const rate = await v.text('check-rate');
  assert.match(rate, /of 3\.22 GB, .*\/s$/);
  // The page stays responsive while hashing: a click on another tab is handled at once.
  const t0 = Date.now();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  assert.ok(Date.now() - t0 < 1000, 'a frame rendered within a second');
  await page.locator('[data-testid=check-cancel]').click();
  await page.locator('[data-testid=check-error]').filter({ hasText: 'cancelled' }).waitFor();
  assert.ok(await page.locator('[data-testid=check-job]').isHidden());
  assert.deepEqual(browser.errors, []);
});
