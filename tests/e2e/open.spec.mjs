// Opening checkpoints: the built-in sample on load, the file picker, and a drop event carrying real Files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();

test('the page opens on the built-in sample and summarises it', async () => {
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  assert.equal(await v.text('source'), 'sample: gguf_v3_le.gguf');
  assert.equal(await v.text('summary-format'), 'gguf');
  assert.equal(await v.text('summary-tensors'), '37');
  assert.match(await v.text('summary-file-type'), /^15 /);
  assert.ok((await s.browser.page.locator('[data-testid=dtype-row]').count()) > 10, 'the quant mix chart has a bar per type');
  await screenshot(s.browser.page, 'summary');
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
