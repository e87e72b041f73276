// What a file is (tests/fixtures/kinds): the kind first in the summary, a projector checked
// against the model it is opened with, an adapter's ranks and alphas, the tokenizer's tokens
// looked up by id and by text against gguf-py's list, and chat templates shown as text with
// their injection findings and hidden characters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session({ temp: true });
const expected = JSON.parse(fs.readFileSync(fixture('kinds', 'expected.json'), 'utf8'));

test('the summary names each kind first', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  for (const [file, kind, detail] of [
    ['lora.gguf', 'adapter', /LoRA \(llama\.cpp GGUF\), rank 8, alpha 16, 2 modules/],
    ['mmproj-fit.gguf', 'projector', /gemma3 vision projector into 64-wide embeddings/],
    ['imatrix.gguf', 'imatrix', /100 chunks of 512 tokens/],
    ['vocab.gguf', 'vocab', /llama tokenizer of 40 tokens and no weights/],
  ]) {
    await v.pick(fixture('kinds', file));
    await v.waitLoaded(file);
    const dd = page.locator('[data-testid=summary-kind]');
    assert.equal(await dd.getAttribute('data-kind'), kind, file);
    assert.match(await dd.textContent(), detail, file);
    const first = await page.locator('[data-testid=summary] dl.facts dt').first().textContent();
    assert.equal(first, 'Kind');
  }
  assert.deepEqual(s.browser.errors, []);
});

test('a projector for another model is a finding that names both widths', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick([fixture('kinds', 'model.gguf'), fixture('kinds', 'mmproj-wrong.gguf')]);
  await v.waitLoaded('2 files');
  assert.match(await v.text('summary-kind'), /model: with its multimodal projector/);
  await v.tab('findings');
  const text = await page.locator('[data-testid=findings]').textContent();
  assert.match(text, /projector\.width_mismatch/);
  assert.match(text, /48-wide embeddings \(mm\.2\.weight ne\[1\]\) but the model's gemma3\.embedding_length makes 64/);
  assert.match(text, /projector\.family_mismatch/);
  assert.doesNotMatch(text, /not_a_split_set/);
  assert.deepEqual(s.browser.errors, []);
});

test('a kohya LoRA shows each module with the alpha its tensor holds, and its training tags', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('kinds', 'kohya.safetensors'));
  await v.waitLoaded('kohya.safetensors');
  const rows = page.locator('[data-testid=adapter-module]');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('[data-testid=module-alpha]')].every((e) => e.textContent !== '…'));
  assert.equal(await rows.count(), 2);
  const alphas = await page.locator('[data-testid=module-alpha]').allTextContents();
  const names = await page.locator('[data-testid=adapter-module] code').allTextContents();
  const byName = Object.fromEntries(names.map((n, i) => [n, alphas[i]]));
  assert.equal(byName.lora_unet_mid_block_attentions_0_proj_in, '2');
  assert.equal(byName.lora_te_text_model_encoder_layers_0_mlp_fc1, '1');
  assert.deepEqual(await page.locator('[data-testid=module-rank]').allTextContents(), ['4', '4']);
  assert.match(await v.text('adapter-tags'), /subject\s*12/);
  assert.match(await v.text('adapter-settings'), /ss_learning_rate/);
  assert.deepEqual(s.browser.errors, []);
});

test('tokens are read as gguf-py reads them, by id and by text, and templates are text with line numbers', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('kinds', 'model.gguf'));
  await v.waitLoaded('model.gguf');
  await v.tab('tokenizer');
  assert.match(await v.text('tokenizer-facts'), /llama tokenizer, pre-tokenizer default, 40 tokens, 6 merges/);
  await page.locator('[data-testid=special-bos] code', { hasText: '<bos>' }).waitFor();
  assert.match(await v.text('special-eot'), /5\s*<end_of_turn>/);
  // Merges: counted, and searched in the file.
  const merges = page.locator('[data-testid=tokenizer] [data-testid=meta-array]');
  await merges.locator('[data-testid=array-expand]').click();
  await merges.locator('[data-testid=array-search]').fill('orld');
  await merges.locator('[data-testid=array-count]', { hasText: '1 matching items' }).waitFor();
  assert.equal(await merges.locator('[data-testid=array-items] code').textContent(), '▁w orld');
  // The rows in view match gguf-py's tokens: id, visible text, type, score.
  await page.locator('[data-testid=token-row][data-id="12"]').waitFor();
  for (const id of [0, 6, 12, 18]) {
    const row = page.locator(`[data-testid=token-row][data-id="${id}"]`);
    const want = expected.tokens[id];
    const shown = want.text.replace('\n', '\\n').replace('\u200b', '\\u{200b}');
    assert.equal(await row.locator('.token-text').textContent(), shown);
    assert.match(await row.textContent(), new RegExp(want.type));
  }
  // By id: the row is scrolled to and marked.
  await page.locator('[data-testid=token-search]').fill('33');
  await page.locator('[data-testid=token-row][data-id="33"].picked').waitFor();
  // By text: every match, as gguf-py's list has them.
  await page.locator('[data-testid=token-search]').fill('hello');
  await page.locator('[data-testid=token-found]').waitFor();
  const ids = await page.locator('[data-testid=token-found] [data-testid=token-row]').evaluateAll((rs) => rs.map((r) => Number(r.dataset.id)));
  const want = expected.tokens.filter((t) => t.text.toLowerCase().includes('hello')).map((t) => t.id);
  assert.deepEqual(ids, want);
  // Templates: as code with line numbers, never as HTML.
  const tpl = page.locator('[data-testid=template][data-name=default] [data-testid=template-code]');
  assert.equal(await tpl.locator('.code-line').count(), 13);
  assert.equal(await tpl.locator('.code-line').nth(3).locator('.ln').textContent(), '4');
  assert.match(await tpl.textContent(), /<start_of_turn>/);
  assert.equal(await page.locator('[data-testid=template] start_of_turn').count(), 0);
  assert.equal(await page.locator('[data-testid=template-finding]').count(), 0);
  // A file with no tokenizer has no Tokenizer tab, and its summary shows instead.
  await v.pick(fixture('kinds', 'kohya.safetensors'));
  await v.waitLoaded('kohya.safetensors');
  await page.locator('[data-testid=summary-kind]').waitFor();
  assert.equal(await page.locator('[data-testid=tab-tokenizer]').count(), 0);
  assert.deepEqual(s.browser.errors, []);
});

test('an injected chat template is flagged with its line, on the tab and in the findings', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('kinds', 'evil-template.gguf'));
  await v.waitLoaded('evil-template.gguf');
  await v.tab('tokenizer');
  const hits = await page.locator('[data-testid=template-finding]').allTextContents();
  assert.ok(hits.includes('template.dunder line 2: .__globals__'), hits.join(' | '));
  assert.ok(hits.includes('template.dangerous_name line 2: .popen('), hits.join(' | '));
  await v.tab('findings');
  assert.match(await page.locator('[data-testid=findings]').textContent(), /chat template 'default' \(tokenizer\.chat_template\) line 2/);
  assert.deepEqual(s.browser.errors, []);
});

test('hidden characters in a chat template are shown as escapes and listed as a warning', async () => {
  const { page } = s.browser;
  // Trojan Source: a right-to-left override, and Unicode tag characters that spell "ignore" unseen.
  const template = "{{ bos_token }}\n{% if x %}\u202e{{ y }}{% endif %}\nHi\u{e0069}\u{e0067}\u{e006e}";
  const dir = path.join(s.tmp.dir, 'hidden');
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(fixture('kinds', 'kohya.safetensors'), path.join(dir, 'kohya.safetensors'));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: template }));
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick([path.join(dir, 'kohya.safetensors'), path.join(dir, 'tokenizer_config.json')]);
  await v.waitLoaded();
  await v.tab('tokenizer');
  const lines = page.locator('[data-testid=template][data-name=default] [data-testid=template-code] .code-line');
  await lines.nth(2).waitFor();
  assert.equal(await lines.nth(1).textContent(), '2{% if x %}\\u{202e}{{ y }}{% endif %}');
  assert.equal(await lines.nth(2).textContent(), '3Hi\\u{e0069}\\u{e0067}\\u{e006e}');
  const hits = page.locator('[data-testid=template-finding]');
  assert.deepEqual(await hits.allTextContents(), [
    'template.hidden_characters line 2: U+202E',
    'template.hidden_characters line 3: U+E0069 and 2 more',
  ]);
  assert.deepEqual(await hits.evaluateAll((els) => els.map((e) => e.className)), ['sev-warning', 'sev-warning']);
  await v.tab('findings');
  const warning = page.locator('[data-testid=finding][data-severity=warning]', { hasText: 'hidden characters (U+202E)' });
  assert.match(await warning.textContent(), /chat template 'default' \(.*tokenizer_config\.json\) line 2/);
  assert.deepEqual(s.browser.errors, []);
});

test("a folder saved by today's transformers: its chat_template.jinja and additional_chat_templates are found and checked", async () => {
  const { page } = s.browser;
  const dir = path.join(s.tmp.dir, 'template-files');
  fs.mkdirSync(path.join(dir, 'additional_chat_templates'), { recursive: true });
  fs.copyFileSync(fixture('kinds', 'kohya.safetensors'), path.join(dir, 'kohya.safetensors'));
  fs.writeFileSync(path.join(dir, 'chat_template.jinja'), '{{ bos_token }}\n{% for m in messages %}{{ m.content }}{% endfor %}');
  fs.writeFileSync(path.join(dir, 'additional_chat_templates', 'tool_use.jinja'), '{{ cycler.__init__.__globals__ }}');
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(dir, 'folder-input');
  await v.waitLoaded();
  await v.tab('tokenizer');
  const names = page.locator('[data-testid=template]');
  await names.nth(1).waitFor();
  assert.deepEqual(await names.evaluateAll((ts) => ts.map((t) => t.dataset.name)), ['default', 'tool_use']);
  const lines = page.locator('[data-testid=template][data-name=default] [data-testid=template-code] .code-line');
  assert.equal(await lines.count(), 2);
  const hits = page.locator('[data-testid=template][data-name=tool_use] [data-testid=template-finding]');
  assert.match((await hits.allTextContents()).join(), /template\.dunder/);
  assert.deepEqual(s.browser.errors, []);
});
