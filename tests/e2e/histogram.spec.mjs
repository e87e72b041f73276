// Tensor detail: a histogram (SVG) and stats for a chosen tensor, over a sample, the whole
// tensor or an element range; block scales for quantized types; the .npy download matches numpy's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();

test('a chosen tensor shows a histogram, stats and block scales', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('gguf_all_types.gguf'));
  await v.waitLoaded('gguf_all_types.gguf');
  await v.selectTensor('t.Q4_K');
  await v.waitHistogram();
  assert.equal(await page.locator('[data-testid=histogram] svg rect').count(), 64);
  const count = Number(await v.text('stat-count'));
  assert.ok(count > 0);
  await page.locator('[data-testid=scales-histogram]').waitFor();
  // Element range.
  await page.locator('[data-testid=range-input]').fill('10:20');
  await page.locator('[data-testid=run-hist]').click();
  await page.waitForFunction(() => /elements 10:20/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
  assert.equal(await v.text('stat-count'), '10');
  // Whole tensor.
  await page.locator('[data-testid=sel-whole]').check();
  await page.locator('[data-testid=run-hist]').click();
  await page.waitForFunction(() => /whole tensor/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
  assert.equal(Number(await v.text('stat-count')), count);
  // Decoded by the worker pool, not by the page.
  const workers = Number(await page.locator('[data-testid=hist-what]').getAttribute('data-workers'));
  assert.ok(workers >= 1, `decoded in ${workers} workers`);
  await page.locator('[data-testid=log-scale]').check();
  await screenshot(page, 'tensor-detail');
  assert.deepEqual(s.browser.errors, []);
});

test('the decoded tensor downloads as the same .npy numpy writes', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('gguf_all_types.gguf'));
  await v.waitLoaded('gguf_all_types.gguf');
  for (const name of ['t.Q4_K', 't.F16', 't.I32']) {
    await v.selectTensor(name);
    const download = page.waitForEvent('download');
    await page.locator('[data-testid=download-npy]').click();
    const d = await download;
    assert.equal(d.suggestedFilename(), `${name}.npy`);
    const got = fs.readFileSync(await d.path());
    const want = fs.readFileSync(fixture('values', `gguf_all_types.gguf__${name}.npy`));
    assert.ok(got.equals(want), `${name}.npy is byte for byte the reference`);
  }
  assert.deepEqual(s.browser.errors, []);
});

test("where Web Workers cannot start, the workers' wasm decodes on the page: the same histogram and .npy", async () => {
  // The reference: the worker pool's whole-tensor statistics.
  const stats = async (page) => page.locator('[data-testid=stats]').innerText();
  const whole = async (page, v, name) => {
    await v.selectTensor(name);
    await v.waitHistogram();
    await page.locator('[data-testid=sel-whole]').check();
    await page.locator('[data-testid=run-hist]').click();
    await page.waitForFunction(() => /whole tensor/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
    return Number(await page.locator('[data-testid=hist-what]').getAttribute('data-workers'));
  };
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  await v.pick(fixture('gguf_all_types.gguf'));
  await v.waitLoaded('gguf_all_types.gguf');
  assert.ok((await whole(s.browser.page, v, 't.Q4_K')) >= 1);
  const want = await stats(s.browser.page);

  const page = await s.browser.context.newPage();
  await page.addInitScript(() => {
    delete globalThis.Worker;
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const fetched = [];
  page.on('request', (r) => fetched.push(new URL(r.url()).pathname));
  const p = new Viewer(page, s.srv.url);
  await p.open();
  await p.pick(fixture('gguf_all_types.gguf'));
  await p.waitLoaded('gguf_all_types.gguf');
  assert.ok(!fetched.includes('/tensorscope-worker_bg.wasm'), 'the workers\' wasm is not on the first view\'s path');
  assert.equal(await whole(page, p, 't.Q4_K'), 0, 'decoded on the page');
  assert.equal(await stats(page), want);
  for (const f of ['/inpage.js', '/tensorscope-worker.js', '/tensorscope-worker_bg.wasm']) {
    assert.ok(fetched.includes(f), `${f} loaded on the page: ${fetched.join(' ')}`);
  }
  assert.ok(!fetched.includes('/worker.js'), 'no worker was started');
  const download = page.waitForEvent('download');
  await page.locator('[data-testid=download-npy]').click();
  const got = fs.readFileSync(await (await download).path());
  assert.ok(got.equals(fs.readFileSync(fixture('values', 'gguf_all_types.gguf__t.Q4_K.npy'))), 'the .npy is the reference');
  assert.deepEqual(errors, []);
  await page.close();
});
