// The tensor table: substring and glob search, sort by a column, grouping by layer with totals,
// and keyboard navigation.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { screenshot } from './helpers.mjs';
import { Viewer, session, fixture } from './viewer.mjs';

const s = session();

test('search by substring and glob', async () => {
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  await v.tab('tensors');
  await v.search('ATTN_Q');
  const names = await v.rowNames();
  assert.ok(names.length >= 2 && names.every((n) => n.includes('attn_q')), names.join());
  await v.search('blk.*.attn_v*');
  const glob = await v.rowNames();
  assert.deepEqual(glob, ['blk.0.attn_v.weight', 'blk.1.attn_v.weight', 'blk.2.attn_v.weight', 'blk.3.attn_v.weight']);
  assert.equal(await v.text('table-count'), '4 of 37 tensors');
  assert.deepEqual(s.browser.errors, []);
});

test('sort by bytes, descending on a second click', async () => {
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  await v.tab('tensors');
  const bytesOf = async () => {
    const names = await v.rowNames();
    return names;
  };
  await s.browser.page.locator('[data-testid=sort-name]').click();
  const byName = await bytesOf();
  assert.deepEqual(byName, [...byName].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })));
  await s.browser.page.locator('[data-testid=sort-bytes]').click();
  await s.browser.page.locator('[data-testid=sort-bytes]').click();
  assert.equal(await s.browser.page.locator('[data-testid=sort-bytes]').getAttribute('aria-sort'), 'descending');
  const first = await s.browser.page.locator('[data-testid=tensor-row]').first().getAttribute('data-name');
  assert.equal(first, 'token_embd.weight');
  assert.deepEqual(s.browser.errors, []);
});

test('group by layer shows per-layer totals and collapses', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await page.setViewportSize({ width: 1280, height: 2400 }); // every row in view: rows are virtualised
  await v.tab('tensors');
  await page.locator('[data-testid=group-toggle]').check();
  const titles = await page.locator('[data-testid=group-title]').allTextContents();
  assert.deepEqual(titles, ['Layer 0', 'Layer 1', 'Layer 2', 'Layer 3', 'Layer 4', 'Not in a layer']);
  const before = await v.rows().count();
  await page.locator('[data-testid=group-row]').first().click();
  assert.equal(await v.rows().count(), before - 7, 'layer 0 (7 tensors) collapsed');
  assert.match(await page.locator('[data-testid=group-params]').first().textContent(), /\d/);
  await page.setViewportSize({ width: 1280, height: 800 });
  await screenshot(page, 'tensor-table-grouped');
  assert.deepEqual(s.browser.errors, []);
});

test('keyboard: arrows move, Enter opens the tensor', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.tab('tensors');
  await page.locator('[data-testid=table-body]').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=detail-name]').waitFor();
  assert.equal(await v.text('detail-name'), 'output_norm.weight');
  await page.keyboard.press('End');
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=detail-name]').filter({ hasText: 'blk.4.attn_q.weight' }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});

test('opening another file while the table is shown shows that file\'s rows, and clicks open its tensors', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.tab('tensors');
  assert.equal((await v.rowNames())[0], 'token_embd.weight');
  // Rows at the same places exist in both files: none may keep the first file's tensor.
  await v.pick(fixture('gguf_all_types.gguf'));
  await v.waitLoaded('gguf_all_types.gguf');
  const names = await v.rowNames();
  assert.deepEqual(names.slice(0, 3), ['t.F32', 't.F16', 't.Q4_0'], names.join());
  const cells = await page.locator('[data-testid=cell-name] .name').allTextContents();
  assert.deepEqual(cells.slice(0, 3), ['t.F32', 't.F16', 't.Q4_0']);
  await page.locator('[data-testid=tensor-row]').nth(1).click();
  await page.locator('[data-testid=detail-name]').filter({ hasText: 't.F16' }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});
