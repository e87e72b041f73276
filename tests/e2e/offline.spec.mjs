// Offline: after the first visit the service worker serves the app; with the browser offline
// and the server gone, a reload still shows the viewer and opens the built-in sample.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Viewer, session } from './viewer.mjs';

const s = session();

test('the service worker serves the app offline after the first visit', async () => {
  const { page, context } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  // Installed, precached and controlling the page.
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 15_000 });
  // A page opened with a query once the worker controls it (a ?url= may hold a signed URL's
  // token) is not kept under its query.
  await v.open('', { sample: 'gguf_all_types.gguf' });
  await v.open();
  const keys = await page.evaluate(async () => (await (await caches.open('tensorscope-v6')).keys()).map((r) => r.url));
  const cached = keys.map((k) => new URL(k).pathname);
  for (const f of ['/tensorscope-web_bg.wasm', '/worker.js', '/tensorscope-worker.js', '/tensorscope-worker_bg.wasm']) {
    assert.ok(cached.includes(f), `${f} in ${cached}`);
  }
  assert.ok(keys.every((k) => !new URL(k).search), keys.join(' '));

  await context.setOffline(true);
  await s.srv.close(); // and the server is gone too
  const before = s.srv.requests.length;
  await page.reload();
  await v.waitLoaded('sample: gguf_v3_le.gguf');
  assert.equal(await v.text('summary-tensors'), '37');
  // Values decode offline too, on the worker pool (its script and wasm from the cache).
  await v.selectTensor('token_embd.weight');
  await v.waitHistogram();
  await page.locator('[data-testid=sel-whole]').check();
  await page.locator('[data-testid=run-hist]').click();
  await page.waitForFunction(() => /whole tensor/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
  const workers = Number(await page.locator('[data-testid=hist-what]').getAttribute('data-workers'));
  assert.ok(workers >= 1, `offline, decoded in ${workers} workers`);
  assert.equal(s.srv.requests.length, before, 'nothing reached the server');
  await context.setOffline(false);
  const errs = s.browser.errors.filter((e) => !/Failed to load resource|ERR_INTERNET_DISCONNECTED/.test(e));
  assert.deepEqual(errs, []);
});
