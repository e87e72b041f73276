// The README's pictures, taken from the built-in sample on every run so they stay true:
// docs/screenshots/{summary,tensors,tokenizer,pickle}.png at 1280×800.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();
const DIR = path.resolve(import.meta.dirname, '..', '..', 'docs', 'screenshots');

async function shot(page, name) {
  fs.mkdirSync(DIR, { recursive: true });
  const file = path.join(DIR, `${name}.png`);
  await page.screenshot({ path: file });
  assert.ok(fs.statSync(file).size > 10_000, `${name}.png was written`);
}

test('the main views of the sample, for the README', async () => {
  const { page } = s.browser;
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });
  const v = new Viewer(page, s.srv.url);
  await v.open('', { sample: null });
  await page.locator('[data-testid=dtype-chart]').scrollIntoViewIfNeeded();
  await shot(page, 'summary');
  await v.tab('tensors');
  await v.search('blk.7.');
  await page.locator('[data-testid=tensor-row][data-name="blk.7.ffn_down.weight"]').click();
  await v.waitHistogram();
  await shot(page, 'tensors');
  await page.locator('[data-testid=detail-close]').click();
  await v.tab('tokenizer');
  await page.locator('[data-testid=token-row][data-id="12"]').waitFor();
  await page.locator('[data-testid=token-search]').fill('▁t');
  await page.locator('[data-testid=token-found]').waitFor();
  await shot(page, 'tokenizer');
  await v.pick(fixture('pickle', 'evil-hidden.pt'));
  await v.waitLoaded('evil-hidden.pt');
  await v.tab('summary');
  await page.locator('[data-testid=imports]').scrollIntoViewIfNeeded();
  await shot(page, 'pickle');
  assert.deepEqual(s.browser.errors, []);
});
