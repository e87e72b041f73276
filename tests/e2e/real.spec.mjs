// The world's files in the browser: one real file per format (tests/real/manifest.json, fetched
// by scripts/fetch-real-files.py) shows what the independent readers read
// (tests/real/expected.json): its tensors, a tensor's values over the whole tensor, and the
// verdicts, as the CLI gives them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from './helpers.mjs';
import { Viewer, session } from './viewer.mjs';

const s = session();
const REAL = path.join(REPO, 'tests', 'real');
const manifest = JSON.parse(fs.readFileSync(path.join(REAL, 'manifest.json'), 'utf8'));
const expected = JSON.parse(fs.readFileSync(path.join(REAL, 'expected.json'), 'utf8'));
const cache =
  process.env.TENSORSCOPE_REAL_FILES ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'tensorscope', 'real-files');

function realFile(id) {
  const f = manifest.files.find((x) => x.id === id);
  const p = path.join(cache, 'files', id, f.file);
  assert.ok(fs.existsSync(p), `${p}: run python3 scripts/fetch-real-files.py`);
  return { path: p, name: f.file, want: expected[id] };
}

/** Open `id`, check its tensor count, and a whole-tensor histogram of `tensor` (the first tensor
 *  with values when not given) against the reference's statistics. */
async function opensAsTheReferenceReadsIt(id, tensor) {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  const f = realFile(id);
  await v.open();
  await v.pick(f.path);
  await v.waitLoaded(f.name);
  assert.equal(await v.text('summary-format'), f.want.format);
  assert.equal(await v.text('summary-tensors'), String(f.want.tensors.length));
  const name = tensor ?? Object.keys(f.want.values).find((n) => f.want.values[n].count > 1);
  const w = f.want.values[name];
  await v.selectTensor(name);
  await page.locator('[data-testid=sel-whole]').check();
  await page.locator('[data-testid=run-hist]').click();
  await page.waitForFunction(
    (n) => document.querySelector('[data-testid=stat-count]')?.textContent === n,
    String(w.count),
    { timeout: 60_000 },
  );
  // The panel shows four significant digits.
  assert.equal(Number(await v.text('stat-min')).toPrecision(4), w.min.toPrecision(4));
  assert.equal(Number(await v.text('stat-max')).toPrecision(4), w.max.toPrecision(4));
  return { v, page, f };
}

async function loadsWithWeightsOnly(v, page) {
  await v.tab('summary');
  return page.locator('[data-testid=weights-only]').getAttribute('data-loads');
}

async function findingCodes(v, page) {
  await v.tab('findings');
  return page.locator('[data-testid=finding-code]').allTextContents();
}

test("llama.cpp's Q4_K_M of a 640-wide model: its fallback mix is said, not called mislabelled", async () => {
  const { v, page } = await opensAsTheReferenceReadsIt('gemma-3-270m-q4_k_m', 'blk.0.ffn_down.weight');
  const codes = await findingCodes(v, page);
  assert.ok(codes.includes('gguf.quant_fallback'), codes.join());
  assert.ok(!codes.some((c) => c.endsWith('_mismatch')), codes.join());
  assert.deepEqual(s.browser.errors, []);
});

test('a safetensors LoRA adapter reads as the safetensors package reads it', async () => {
  await opensAsTheReferenceReadsIt('bias-lora-adapter');
  assert.deepEqual(s.browser.errors, []);
});

test("torch's Python 2 legacy format lists its tensors and loads with weights_only", async () => {
  const { v, page } = await opensAsTheReferenceReadsIt('lpips-v0.0-alex');
  assert.equal(await loadsWithWeightsOnly(v, page), 'true');
  assert.deepEqual(s.browser.errors, []);
});

test('a column-major pickle view has values and says how it is stored', async () => {
  const { v } = await opensAsTheReferenceReadsIt('facenet-onet', 'conv1.weight');
  assert.match(await v.text('detail-strides'), /^\[1, 32, 96, 288\]/);
  assert.deepEqual(s.browser.errors, []);
});

test('a TorchScript archive named .jit shows its tensors and that its code runs on load', async () => {
  const { v, page } = await opensAsTheReferenceReadsIt('silero-vad-jit', '_model.encoder.0.reparam_conv.weight');
  assert.equal(await loadsWithWeightsOnly(v, page), 'false');
  assert.match(await v.text('torchscript'), /compiles and runs/);
  const codes = await findingCodes(v, page);
  assert.ok(codes.includes('pickle.torchscript'), codes.join());
  assert.deepEqual(s.browser.errors, []);
});

test("llama.cpp's 256k-token command-r vocabulary: tokens paged from the file as gguf-py reads them, three templates", async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  const f = realFile('llama.cpp-vocab-command-r');
  await v.open();
  await v.pick(f.path);
  await v.waitLoaded(f.name);
  assert.equal(await v.text('summary-tensors'), '0');
  await v.tab('tokenizer');
  assert.match(await v.text('tokenizer-facts'), /gpt2 tokenizer, pre-tokenizer command-r, 256000 tokens, 253333 merges/);
  await page.locator('[data-testid=special-bos] code', { hasText: '<BOS_TOKEN>' }).waitFor();
  // The first rows are gguf-py's first tokens.
  const tokens = f.want.metadata.find(([key]) => key === 'tokenizer.ggml.tokens')[2].head;
  await page.locator('[data-testid=token-row][data-id="8"]').waitFor();
  for (const id of [0, 5, 8]) {
    const row = page.locator(`[data-testid=token-row][data-id="${id}"]`);
    assert.equal(await row.locator('.token-text').textContent(), tokens[id]);
  }
  // The last token, 255,999 rows down, is paged in from the file.
  await page.locator('[data-testid=token-search]').fill('255999');
  await page.locator('[data-testid=token-row][data-id="255999"].picked').waitFor();
  const names = await page.locator('[data-testid=template]').evaluateAll((ts) => ts.map((t) => t.dataset.name).sort());
  assert.deepEqual(names, Object.keys(f.want.templates).sort());
  assert.equal(await page.locator('[data-testid=template-finding]').count(), 0);
  assert.deepEqual(s.browser.errors, []);
});

test('a sentence-transformers folder picked whole: an encoder, sized without a KV cache, its other files listed', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  const f = realFile('all-minilm-l6-v2');
  await v.open();
  await v.pick(path.dirname(f.path), 'folder-input');
  await v.waitLoaded();
  assert.equal(await v.text('summary-tensors'), String(f.want.tensors.length));
  // llama.cpp makes BERT no cache: the weights are the memory to run, whatever the context.
  assert.match(await v.text('estimate-about'), /^bert · from config\.json · 6 layers, 0 with a KV cache$/);
  assert.equal(await page.locator('[data-testid=kv-table]').count(), 0);
  assert.equal(await page.locator('[data-testid=estimate-unknown]').count(), 0);
  // Nothing flagged; the files transformers does not read (tokenizer.json, vocab.txt, the
  // sentence-transformers configs, README.md) are listed as ignored, and so is the pooling
  // layer's config.json, which the folder walk brings from 1_Pooling/ (read, it hid the model's).
  const codes = await findingCodes(v, page);
  const others = f.want && ['README.md', 'tokenizer.json', 'vocab.txt', 'modules.json', 'special_tokens_map.json'];
  assert.ok(codes.length >= others.length + 1 && codes.every((c) => c === 'set.ignored_file'), codes.join());
  const findings = await page.locator('[data-testid=finding]').allTextContents();
  for (const name of others) {
    assert.ok(findings.some((t) => t.includes(`/${name} is not a checkpoint file`)), `${name}: ${findings.join(' | ')}`);
  }
  assert.equal(findings.filter((t) => t.includes("1_Pooling/config.json is in a folder below the weights' and was ignored")).length, 1);
  assert.deepEqual(s.browser.errors, []);
});
