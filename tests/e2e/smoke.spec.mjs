// The built viewer (dist/) loads in Chromium and renders the App.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serveDist, launch, screenshot } from './helpers.mjs';

let srv;
let browser;
before(async () => {
  srv = await serveDist();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.close();
});

test('viewer loads, wasm is served as application/wasm, App renders its heading', async () => {
  const { page, errors } = browser;
  const wasmResponse = page.waitForResponse((r) => r.url().endsWith('.wasm'));
  await page.goto(srv.url);
  const wasm = await wasmResponse;
  assert.equal(wasm.status(), 200);
  assert.equal(wasm.headers()['content-type'], 'application/wasm');

  const app = page.locator('[data-testid=app]');
  await app.waitFor({ state: 'visible', timeout: 15_000 });
  assert.equal(await app.locator('h1').textContent(), 'Tensorscope');
  assert.match(await page.locator('[data-testid=tagline]').textContent(), /safetensors and GGUF/);
  assert.equal(await page.title(), 'Tensorscope');

  const shot = await screenshot(page, 'smoke');
  console.log(`screenshot: ${shot}`);
  assert.deepEqual(errors, []);
  const failed = srv.requests.filter((r) => r.status >= 400);
  assert.deepEqual(failed, [], 'every request the page made succeeded');
});
