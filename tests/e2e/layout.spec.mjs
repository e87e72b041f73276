// Layout: the tensor panel opens beside the table on a wide screen (resizable by its handle and
// by the keyboard), over it on a narrow one; the table is as tall as its rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { screenshot } from './helpers.mjs';
import { Viewer, session } from './viewer.mjs';

const s = session();

const box = (page, testid) => page.locator(`[data-testid=${testid}]`).first().boundingBox();

test('at 1400×900 the detail opens beside the table, in view, and resizes', async () => {
  const { page } = s.browser;
  await page.setViewportSize({ width: 1400, height: 900 });
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.tab('tensors');
  await v.search('blk.3.ffn_down');
  await page.locator('[data-testid=tensor-row]').first().click();
  await page.locator('[data-testid=tensor-detail]').waitFor();
  const table = await box(page, 'table-body');
  const detail = await box(page, 'tensor-detail');
  assert.ok(detail.x >= table.x + table.width, `beside: table ends at ${table.x + table.width}, detail starts at ${detail.x}`);
  assert.ok(detail.y < 900 && detail.y + 40 < 900, `the detail's top is in view (${detail.y})`);
  assert.ok(table.height <= 2 * 28 + 1, `one row: the table shrinks to it (${table.height})`);
  // Drag the handle left: the panel grows.
  const handle = await box(page, 'detail-resize');
  await page.mouse.move(handle.x + handle.width / 2, handle.y + 50);
  await page.mouse.down();
  await page.mouse.move(handle.x - 200, handle.y + 50, { steps: 5 });
  await page.mouse.up();
  const wider = await box(page, 'tensor-detail');
  assert.ok(wider.width > detail.width + 150, `${detail.width} → ${wider.width}`);
  // And by the keyboard.
  await page.locator('[data-testid=detail-resize]').focus();
  await page.keyboard.press('ArrowRight');
  const narrower = await box(page, 'tensor-detail');
  assert.ok(narrower.width < wider.width, `${wider.width} → ${narrower.width}`);
  await screenshot(page, 'tensor-detail-beside');
  assert.deepEqual(s.browser.errors, []);
});

test('at 360 px the detail is an overlay with a close button, in both themes', async () => {
  const { page } = s.browser;
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 360, height: 740 });
    const v = new Viewer(page, s.srv.url);
    await v.open();
    await v.selectTensor('blk.0.attn_q.weight');
    const detail = await box(page, 'tensor-detail');
    assert.ok(detail.x >= 0 && detail.width <= 360 && detail.y <= 1, `overlay: ${JSON.stringify(detail)}`);
    const position = await page.locator('[data-testid=tensor-detail]').evaluate((e) => getComputedStyle(e).position);
    assert.equal(position, 'fixed');
    const noHorizontalScroll = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
    assert.ok(noHorizontalScroll, 'nothing wider than the screen');
    await page.locator('[data-testid=detail-close]').click();
    assert.equal(await page.locator('[data-testid=tensor-detail]').count(), 0);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.deepEqual(s.browser.errors, []);
});
