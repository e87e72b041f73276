// #tensor=NAME permalinks: opening one selects the tensor; choosing a tensor updates the hash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Viewer, session } from './viewer.mjs';

const s = session();

test('a permalink opens its tensor, and choosing a tensor sets the permalink', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open('#tensor=blk.1.attn_k.weight');
  await page.locator('[data-testid=detail-name]').filter({ hasText: 'blk.1.attn_k.weight' }).waitFor();
  await v.waitHistogram();
  assert.ok(await page.locator('[data-testid=tensor-row][data-name="blk.1.attn_k.weight"].selected').count());
  await page.locator('[data-testid=tensor-row][data-name="output_norm.weight"]').click();
  await page.waitForFunction(() => location.hash === '#tensor=output_norm.weight');
  // Navigating to another permalink follows it.
  await page.evaluate(() => { location.hash = '#tensor=blk.2.attn_q.weight'; });
  await page.locator('[data-testid=detail-name]').filter({ hasText: 'blk.2.attn_q.weight' }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});
