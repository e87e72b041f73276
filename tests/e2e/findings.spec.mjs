// A damaged file still opens: what can be read is shown and its faults are listed as findings,
// linked to the tensor they concern.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session({ temp: true });

test('a truncated GGUF shows its findings with rule, location and tensor link', async () => {
  const { page } = s.browser;
  const file = path.join(s.tmp.dir, 'damaged.gguf');
  // Keep the header and cut the tensor data short.
  fs.writeFileSync(file, fs.readFileSync(fixture('gguf_v3_le.gguf')).subarray(0, 9000));
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('damaged.gguf');
  assert.match(await v.text('summary-findings'), /[1-9]\d* errors/);
  await v.tab('findings');
  const errors = page.locator('[data-testid=finding][data-severity=error]');
  assert.ok((await errors.count()) > 0);
  const msg = await errors.first().locator('[data-testid=finding-message]').textContent();
  assert.ok(msg.length > 0);
  await screenshot(page, 'findings');
  const link = page.locator('[data-testid=finding-tensor]:not([disabled])').first();
  const name = await link.textContent();
  await link.click();
  await page.locator('[data-testid=detail-name]').filter({ hasText: name }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});
