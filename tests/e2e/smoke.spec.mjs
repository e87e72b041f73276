// The built viewer (dist/) loads in Chromium and renders the App.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { screenshot } from './helpers.mjs';
import { session } from './viewer.mjs';

const s = session();

test('viewer loads, wasm is served as application/wasm, App renders its heading', async () => {
  const { page, errors } = s.browser;
  const wasmResponse = page.waitForResponse((r) => r.url().endsWith('.wasm'));
  await page.goto(s.srv.url);
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
  const failed = s.srv.requests.filter((r) => r.status >= 400);
  assert.deepEqual(failed, [], 'every request the page made succeeded');
});
