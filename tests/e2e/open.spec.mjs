// Opening checkpoints: the built-in sample on load, the file picker, and a drop event carrying real Files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();

test('the page opens on a built-in sample that looks like a real model, labelled as a sample', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open('', { sample: null });
  assert.equal(await v.text('source'), 'sample: tensorscope-sample-16L-Q4_K_M.gguf');
  assert.equal(await v.text('summary-format'), 'gguf');
  assert.equal(await v.text('summary-tensors'), String(1 + 16 * 9 + 2));
  assert.match(await v.text('summary-file-type'), /^15 \(MOSTLY_Q4_K_M\)/);
  const labels = await page.locator('[data-testid=dtype-row] .bar-label').allTextContents();
  assert.deepEqual([...labels].sort(), ['F32', 'Q4_K', 'Q6_K'], 'the Q4_K_M mix');
  await v.tab('tokenizer');
  assert.match(await v.text('tokenizer-facts'), /512 tokens/);
  await page.locator('[data-testid=template]').first().waitFor();
  await v.tab('metadata');
  assert.match(await page.locator('[data-testid=metadata]').textContent(), /random weights/);
  await v.tab('summary');
  await screenshot(page, 'summary');
  assert.deepEqual(s.browser.errors, []);
});

test('the second sample is a sharded safetensors set with its index and config', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open('', { sample: null });
  await page.locator('[data-testid=sample]', { hasText: 'tensorscope-sample-st' }).click();
  await v.waitLoaded('sample: tensorscope-sample-st (2 shards)');
  assert.equal(await v.text('summary-format'), 'safetensors');
  assert.equal(await v.text('summary-files'), '2');
  assert.equal(await v.text('summary-tensors'), String(24 * 9 + 3));
  assert.equal(await page.locator('[data-testid=findings-badge]').textContent(), '0', 'the index matches the shards');
  assert.match(await page.locator('[data-testid=summary]').textContent(), /llama/);
  assert.deepEqual(s.browser.errors, []);
});

test('the file picker opens a safetensors file', async () => {
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  await v.pick(fixture('st_all_numpy_dtypes.safetensors'));
  await v.waitLoaded('st_all_numpy_dtypes.safetensors');
  assert.equal(await v.text('summary-format'), 'safetensors');
  assert.equal(await v.text('summary-tensors'), '13');
  assert.deepEqual(s.browser.errors, []);
});

test('a drop event carrying real Files opens them', async () => {
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  const bytes = [...fs.readFileSync(fixture('gguf_all_types.gguf'))];
  const dt = await s.browser.page.evaluateHandle((b) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(b)], 'dropped.gguf'));
    return dt;
  }, bytes);
  await s.browser.page.locator('[data-testid=drop-zone]').dispatchEvent('drop', { dataTransfer: dt });
  await v.waitLoaded('dropped.gguf');
  assert.equal(await v.text('summary-tensors'), '34');
  assert.deepEqual(s.browser.errors, []);
});
