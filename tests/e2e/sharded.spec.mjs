// Sets of files: a Hugging Face folder (shards + index + config + a pickle) picked as a folder,
// and a split GGUF set picked as several files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session({ temp: true });

test('a model folder opens as one checkpoint; its config sizes the cache; other files and pickles are noted, not loaded', async () => {
  const dir = path.join(s.tmp.dir, 'my-model');
  fs.mkdirSync(dir);
  for (const f of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']) {
    fs.copyFileSync(fixture('sharded', f), path.join(dir, f));
  }
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({
    architectures: ['LlamaForCausalLM'], model_type: 'llama', num_hidden_layers: 32, hidden_size: 4096,
    num_attention_heads: 32, num_key_value_heads: 8, max_position_embeddings: 8192, torch_dtype: '<b>bfloat16</b>',
  }));
  fs.writeFileSync(path.join(dir, 'README.md'), '# my model');
  // A zip-pickle header: recognised as a pickle checkpoint and never executed.
  fs.writeFileSync(path.join(dir, 'pytorch_model.bin'), Buffer.from('PK\x03\x04archive/data.pkl', 'latin1'));
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  await v.pick(dir, 'folder-input');
  await v.waitLoaded('6 files');
  assert.equal(await v.text('summary-format'), 'safetensors');
  assert.equal(await v.text('summary-files'), '2');
  // The config's facts, as text (markup in a file is never HTML), and the cache they imply.
  const page = s.browser.page;
  const facts = await page.locator('[data-testid=config-fact]').allTextContents();
  assert.deepEqual(facts, ['LlamaForCausalLM', 'llama', '<b>bfloat16</b>']);
  assert.match(await v.text('estimate-about'), /llama · from config\.json · 32 layers, 32 with a KV cache/);
  const f16 = page.locator('[data-testid=kv-row][data-context="8192"] [data-testid=kv-bytes][data-type=f16]');
  assert.equal(await f16.getAttribute('title'), String(2 ** 30), '1 GiB of f16 cache at 8k, as llama.cpp allocates it');
  assert.equal(await page.locator('[data-testid=kv-row]').count(), 3);
  // A context of one's own: a row more.
  await page.locator('[data-testid=context-input]').fill('131072');
  await page.locator('[data-testid=context-add]').click();
  const at128k = page.locator('[data-testid=kv-row][data-context="131072"] [data-testid=kv-bytes][data-type=f16]');
  assert.equal(await at128k.getAttribute('title'), String(16 * 2 ** 30));
  await v.tab('findings');
  const codes = await page.locator('[data-testid=finding-code]').allTextContents();
  assert.equal(codes.filter((c) => c === 'set.ignored_file').length, 1, `only README.md is ignored: ${codes}`);
  assert.ok(codes.includes('set.pickle_not_loaded'), `the pickle is explained: ${codes}`);
  await v.tab('tensors');
  const expected = JSON.parse(fs.readFileSync(fixture('sharded', 'model.safetensors.index.json'), 'utf8'));
  assert.equal(await s.browser.page.locator('[data-testid=table-count]').textContent(),
    `${Object.keys(expected.weight_map).length} of ${Object.keys(expected.weight_map).length} tensors`);
  assert.deepEqual(s.browser.errors, []);
});

test('a split GGUF set picked as files opens as one model', async () => {
  const v = new Viewer(s.browser.page, s.srv.url);
  await v.open();
  const files = [1, 2, 3].map((i) => fixture('split', `model-0000${i}-of-00003.gguf`));
  await v.pick(files);
  await v.waitLoaded('3 files');
  assert.equal(await v.text('summary-format'), 'gguf');
  assert.equal(await v.text('summary-files'), '3');
  await v.tab('tensors');
  const names = await v.rowNames();
  assert.ok(names.length > 0);
  const fileCol = await s.browser.page.locator('[data-testid=tensor-row] .col-file').allTextContents();
  assert.ok(new Set(fileCol).size > 1, 'tensors come from several files');
  await screenshot(s.browser.page, 'split-gguf');
  assert.deepEqual(s.browser.errors, []);
});
