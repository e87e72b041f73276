// A GGUF with one tensor of every GGML type: every type is listed and every decodable one has a histogram.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();

test('every quant type is listed with its type and decodes to a histogram', async () => {
  const expected = JSON.parse(fs.readFileSync(fixture('gguf_all_types.gguf.expected.json'), 'utf8'));
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('gguf_all_types.gguf'));
  await v.waitLoaded('gguf_all_types.gguf');
  await page.setViewportSize({ width: 1280, height: 2400 }); // every row in view: rows are virtualised
  await v.tab('tensors');
  const dtypes = await s.browser.page.locator('[data-testid=cell-dtype]').allTextContents();
  assert.deepEqual(dtypes, expected.tensors.map((t) => t.dtype));
  for (const t of expected.tensors) {
    await v.selectTensor(t.name);
    await s.browser.page.waitForFunction(
      () => document.querySelector('[data-testid=histogram]') || document.querySelector('[data-testid=detail-error]'),
      null,
      { timeout: 15_000 },
    );
    const err = await s.browser.page.locator('[data-testid=detail-error]').count();
    assert.equal(err, 0, `${t.name} (${t.dtype}) decodes`);
    assert.equal(await s.browser.page.locator('[data-testid=histogram] rect').count(), 64, t.name);
  }
  assert.deepEqual(s.browser.errors, []);
});
