// Accessibility: axe-core finds no serious or critical violation on any view, in both themes;
// the main controls are reachable and usable by keyboard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

async function violations(page, what) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  return found.map((f) => `${what}: ${f}`);
}

test('every view has no serious or critical axe violation, in both themes', async () => {
  const { page } = s.browser;
  const all = [];
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    const v = new Viewer(page, s.srv.url);
    await v.open('', { sample: null });
    for (const tab of ['summary', 'tensors', 'metadata', 'tokenizer', 'findings', 'check', 'diff']) {
      await v.tab(tab);
      await page.waitForTimeout(150);
      all.push(...(await violations(page, `${scheme} ${tab}`)));
    }
    await v.selectTensor('blk.0.attn_q.weight');
    await v.waitHistogram();
    all.push(...(await violations(page, `${scheme} tensor detail`)));
    await v.pick(fixture('pickle', 'evil-reduce.pt'));
    await v.waitLoaded('evil-reduce.pt');
    all.push(...(await violations(page, `${scheme} pickle summary`)));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  assert.deepEqual(all, []);
  assert.deepEqual(s.browser.errors, []);
});

test('the keyboard reaches the tabs, the table and the tensor panel', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await page.locator('[data-testid=tab-tensors]').focus();
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=table-body]').waitFor();
  await page.locator('[data-testid=table-body]').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=tensor-detail]').waitFor();
  await page.locator('[data-testid=detail-close]').focus();
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('[data-testid=tensor-detail]').count(), 0);
  assert.deepEqual(s.browser.errors, []);
});
