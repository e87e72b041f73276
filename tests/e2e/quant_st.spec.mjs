// Quantized safetensors folders (tests/fixtures/quant_st): the quant mix counts logical weights
// with their overhead, and a scaled weight's histogram is of its dequantized values, read on the
// workers; a scheme whose values are not decoded says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session();
const expected = JSON.parse(fs.readFileSync(fixture('quant_st', 'expected.json'), 'utf8'));

test('an MXFP4 folder shows its weights as MXFP4 and their dequantized values', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('quant_st', 'mxfp4'), 'folder-input');
  await v.waitLoaded('2 files');
  const want = expected.mxfp4;
  assert.equal(await page.locator('[data-testid=summary-params]').getAttribute('title'), String(want.params));
  assert.equal(await page.locator('[data-testid=summary-overhead]').getAttribute('title'), String(want.overhead_bytes));
  const labels = await page.locator('[data-testid=dtype-row] .bar-label').allTextContents();
  assert.ok(labels.includes('MXFP4'), `the quant mix: ${labels}`);
  await v.selectTensor(want.tensor);
  await v.waitHistogram();
  assert.match(await v.text('hist-what'), /dequantized \(MXFP4/);
  assert.equal(await v.text('stat-count'), String(want.values.count));
  assert.equal(Number(await v.text('stat-min')), want.values.min);
  assert.equal(Number(await v.text('stat-max')), want.values.max);
  assert.deepEqual(s.browser.errors, []);
});

test('a GPTQ weight says its values are not decoded; its scales have a histogram', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('quant_st', 'gptq'), 'folder-input');
  await v.waitLoaded('2 files');
  assert.equal(await page.locator('[data-testid=summary-params]').getAttribute('title'), String(expected.gptq.params));
  await v.selectTensor('model.layers.0.mlp.down_proj.qweight');
  await page.locator('[data-testid=detail-error]').waitFor();
  // The packed int32s hold 8 weights each: 128 × 64, not the 1024 words stored.
  assert.equal(await v.text('detail-params'), '8.19K');
  assert.equal(await page.locator('[data-testid=tensor-row][data-name="model.layers.0.mlp.down_proj.qweight"] [data-testid=cell-params]').textContent(), '8.19K');
  assert.match(await v.text('detail-error'), /GPTQ 4-bit \(group 32\) weights are packed integers/);
  await v.selectTensor('model.layers.0.mlp.down_proj.scales');
  await v.waitHistogram();
  assert.equal(await v.text('detail-params'), '0', 'scales hold no parameters');
  assert.deepEqual(s.browser.errors, []);
});
