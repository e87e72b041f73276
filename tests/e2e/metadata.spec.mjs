// Metadata: every GGUF key with its type; arrays expand on demand (items past the first 64 are
// read from the file) and are searchable; long strings such as the chat template are shown in full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();

test('keys, types, arrays on demand and the chat template', async () => {
  const { page } = s.browser;
  const expected = JSON.parse(fs.readFileSync(fixture('gguf_v3_le.gguf.expected.json'), 'utf8'));
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.tab('metadata');
  const keys = await page.locator('[data-testid=meta-key]').allTextContents();
  assert.deepEqual(keys, expected.metadata_keys);
  const types = await page.locator('[data-testid=meta-type]').allTextContents();
  assert.equal(types[keys.indexOf('test.u64')], 'u64');
  assert.equal(types[keys.indexOf('tokenizer.ggml.tokens')], 'array[string]');
  const tpl = await page.locator('[data-testid=meta-row]', { has: page.locator('[data-testid=meta-key]', { hasText: /^tokenizer\.chat_template$/ }) }).locator('pre').textContent();
  assert.equal(tpl, expected.metadata['tokenizer.chat_template'].value);

  await page.locator('[data-testid=meta-filter]').fill('tokenizer.ggml.tokens');
  await page.locator('[data-testid=array-expand]').click();
  await page.locator('[data-testid=array-count]').waitFor();
  assert.equal(await v.text('array-count'), 'items 0–100 of 100');
  const tokens = expected.metadata['tokenizer.ggml.tokens'];
  const last = (tokens.value_all ?? tokens.value).at(-1);
  const items = await page.locator('[data-testid=array-items] li code').allTextContents();
  assert.equal(items.length, 100);
  if (tokens.value.length === 100) assert.equal(items[99], last);
  await page.locator('[data-testid=array-search]').fill('日本');
  await page.locator('[data-testid=array-count]').filter({ hasText: /^[1-9]\d* matching items$/ }).waitFor();
  const found = await page.locator('[data-testid=array-items] li code').allTextContents();
  assert.ok(found.length >= 1 && found.every((t) => t.includes('日本')), found.join(' | '));
  await screenshot(page, 'metadata');
  assert.deepEqual(s.browser.errors, []);
});
