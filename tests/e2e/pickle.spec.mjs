// PyTorch pickles in the browser (tests/fixtures/pickle): tensors from torch's zip, their
// values decoded on the workers (a transposed view's too), and the safety report of every import.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();
const expected = JSON.parse(fs.readFileSync(fixture('pickle', 'expected.json'), 'utf8'));

test('a torch zip shows its tensors, their values and what loading it would import', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('pickle', 'torch-zip.pt'));
  await v.waitLoaded('torch-zip.pt');
  assert.equal(await v.text('summary-format'), 'pickle');
  assert.equal(await v.text('summary-tensors'), '7');
  const verdicts = await page.locator('[data-testid=import-row]').evaluateAll((rs) => rs.map((r) => r.dataset.verdict));
  assert.equal(verdicts.length, expected.picklescan['torch-zip.pt'].globals.length);
  assert.ok(verdicts.every((x) => x === 'expected'), verdicts.join());
  assert.match(await v.text('imports-verdict'), /Only what torch checkpoints use/);
  assert.equal(await page.locator('[data-testid=weights-only]').getAttribute('data-loads'), 'true');
  const name = 'state_dict.model.embed_tokens.weight';
  const want = expected['torch-zip.pt'][name].values;
  await v.selectTensor(name);
  await v.waitHistogram();
  assert.equal(await v.text('stat-count'), String(want.length));
  // The panel shows four significant digits.
  assert.equal(Number(await v.text('stat-min')).toPrecision(4), Math.min(...want).toPrecision(4));
  assert.equal(Number(await v.text('stat-max')).toPrecision(4), Math.max(...want).toPrecision(4));
  // A transposed view holds its elements in another order: its values are read all the same.
  const t = 'state_dict.model.norm.transposed';
  const tw = expected['torch-zip.pt'][t].values;
  await v.selectTensor(t);
  assert.match(await v.text('detail-strides'), /^\[1, 4\]/);
  await v.waitHistogram();
  assert.equal(await v.text('stat-count'), String(tw.length));
  assert.equal(Number(await v.text('stat-max')).toPrecision(4), Math.max(...tw).toPrecision(4));
  assert.deepEqual(s.browser.errors, []);
});

test('a pickle that would run os.system is an error, and nothing ran', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('pickle', 'evil-reduce.pt'));
  await v.waitLoaded('evil-reduce.pt');
  assert.match(await v.text('imports-verdict'), /1 dangerous imports/);
  const row = page.locator('[data-testid=import-row][data-verdict=dangerous]');
  assert.equal(await row.locator('code').textContent(), 'posix.system');
  await v.tab('findings');
  assert.match(await page.locator('[data-testid=findings]').textContent(), /pickle\.dangerous_import.*posix\.system/s);
  assert.deepEqual(s.browser.errors, []);
});
