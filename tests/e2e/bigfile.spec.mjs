// A 3 GiB sparse file: headers open at once, tensors past 2 GiB decode (u64 offsets end to end),
// and a whole-tensor scan can be cancelled.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Viewer, makeBig, session } from './viewer.mjs';

const s = session({ temp: true });

test('a 3 GiB sparse file opens, lists its tensors and decodes values past 2 GiB', async () => {
  const file = path.join(s.tmp.dir, 'big.safetensors');
  const { tailElems } = makeBig(file);
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('big.safetensors');
  assert.equal(await v.text('summary-tensors'), '2');
  await v.tab('findings');
  assert.equal(await s.browser.page.locator('[data-testid=finding][data-severity=error]').count(), 0);
  await v.selectTensor('tail');
  await v.waitHistogram();
  // The last 1000 elements lie just before byte 3 GiB.
  await s.browser.page.locator('[data-testid=range-input]').fill(`${tailElems - 1000}:${tailElems}`);
  await s.browser.page.locator('[data-testid=run-hist]').click();
  await s.browser.page.waitForFunction(() => /elements/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
  assert.equal(await v.text('stat-count'), '1000');
  assert.equal(await v.text('stat-zeros'), '1000');

  // A whole-tensor scan of 3 GiB shows progress and stops on cancel.
  await s.browser.page.locator('[data-testid=sel-whole]').check();
  await s.browser.page.locator('[data-testid=run-hist]').click();
  await s.browser.page.locator('[data-testid=job] [data-testid=progress]').waitFor();
  await s.browser.page.locator('[data-testid=cancel]').click();
  await s.browser.page.locator('[data-testid=detail-error]').filter({ hasText: 'cancelled' }).waitFor();
  assert.equal(await s.browser.page.locator('[data-testid=job]').count(), 0);
  assert.deepEqual(s.browser.errors, []);
});
