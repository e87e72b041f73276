// Compare: a second checkpoint against the open one; values compared on the workers; the
// exported diff equals `tensorscope diff --json` byte for byte; `?url=…&vs=…` deep links.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { REPO, DIST } from './helpers.mjs';
import { startServer } from './server.mjs';
import { Viewer, fixture, session, tempDir } from './viewer.mjs';

const s = session();
let cli;

before(() => {
  execFileSync('cargo', ['build', '--quiet', '--bin', 'tensorscope'], { cwd: REPO, stdio: 'inherit' });
  cli = path.join(process.env.CARGO_TARGET_DIR ?? path.join(REPO, 'target'), 'debug', 'tensorscope');
});

test('a GGUF against the safetensors it came from: matched by name, values on the workers, export equals the CLI', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(fixture('diff', 'base.safetensors'));
  await v.waitLoaded('base.safetensors');
  await v.tab('diff');
  await v.pick(fixture('diff', 'base-mixed.gguf'), 'vs-files');
  await page.locator('[data-testid=vs-source]').waitFor();
  await page.waitForFunction(() => /0 only in A, 0 only in B/.test(document.querySelector('[data-testid=diff-summary]')?.textContent ?? ''));
  await page.locator('[data-testid=diff-values-all]').click();
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=diff-summary]')?.dataset.workers) >= 1);
  // The permuted F32 K projection is the same tensor once the permutation is undone.
  await page.locator('[data-testid=diff-changed-only]').uncheck();
  const k = page.locator('[data-testid=diff-row][data-name="model.layers.0.self_attn.k_proj.weight"]');
  assert.equal(await k.getAttribute('data-status'), 'same');
  const q = page.locator('[data-testid=diff-row][data-name="model.layers.0.self_attn.q_proj.weight"]');
  assert.equal(await q.getAttribute('data-status'), 'changed');
  assert.match(await q.locator('[data-testid=diff-cosine]').textContent(), /^0\.9999/);
  // Worst first: the Q4_0 tensor the quantizer hurt most leads, then the Q4_K one.
  await page.locator('[data-testid=diff-worst-first]').check();
  const rows = page.locator('[data-testid=diff-row]');
  assert.equal(await rows.nth(0).getAttribute('data-name'), 'model.layers.0.mlp.gate_proj.weight');
  assert.equal(await rows.nth(1).getAttribute('data-name'), 'model.layers.0.mlp.down_proj.weight');
  // Any column sorts, and a second click reverses: lowest cosine first, then highest.
  const names = () => rows.evaluateAll((els) => els.map((e) => e.dataset.name));
  await page.locator('[data-testid=diff-sort-tensor]').click();
  const byName = await names();
  assert.deepEqual(byName, [...byName].sort());
  await page.locator('[data-testid=diff-sort-cosine]').click();
  assert.equal((await names())[0], 'model.layers.0.mlp.gate_proj.weight', 'lowest cosine first');
  await page.locator('[data-testid=diff-sort-cosine]').click();
  const top = rows.first().locator('[data-testid=diff-cosine]');
  assert.equal(await top.textContent(), '1.000000', 'then the highest');
  assert.equal(await page.locator('[data-testid=diff-worst-first]').isChecked(), false);
  // Layers side by side, and a bar per layer in the worst-NMSE chart.
  assert.equal(await page.locator('[data-testid=layer-bar]').count(), 2);
  const layer0 = await page.locator('[data-testid=diff-layer][data-layer="0"] td').allTextContents();
  assert.equal(layer0[3], '7.100e-3');
  // Totals side by side, per type.
  for (const q4 of ['Q4_0', 'Q4_K']) {
    const cells = page.locator(`[data-testid=diff-total][data-dtype=${q4}] td`);
    assert.deepEqual((await cells.allTextContents()).slice(0, 3), [q4, '0', '8192']);
  }

  const download = page.waitForEvent('download');
  await page.locator('[data-testid=diff-export]').click();
  const got = fs.readFileSync(await (await download).path(), 'utf8');
  let want;
  try {
    want = execFileSync(cli, ['diff', 'base.safetensors', '--vs', 'base-mixed.gguf', '--values', 'all', '--json'], {
      cwd: fixture('diff'),
      encoding: 'utf8',
    });
  } catch (e) {
    want = e.stdout; // exit 1: they differ
  }
  assert.equal(got, want, 'the browser diff equals the CLI diff byte for byte');
  assert.deepEqual(s.browser.errors, []);
});

test('?url= and ?vs= open both sides; a checkpoint against itself is the same', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  const sample = encodeURIComponent(new URL('samples/gguf_v3_le.gguf', s.srv.url).href);
  await v.open(`?url=${sample}&vs=${sample}`);
  await page.locator('[data-testid=diff-panel]').waitFor();
  await page.waitForFunction(() => /^37 same, 0 changed/.test(document.querySelector('[data-testid=diff-summary]')?.textContent ?? ''));
  await page.locator('[data-testid=diff-values]').click();
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=diff-summary]')?.dataset.workers) >= 1);
  assert.match(await page.locator('[data-testid=diff-summary]').textContent(), /^37 same, 0 changed, 0 only in A, 0 only in B; 0 metadata/);
  // Both stay in the address bar once shown.
  assert.equal(new URL(page.url()).search, `?url=${sample}&vs=${sample}`);
  assert.deepEqual(s.browser.errors, []);
});

test('opening B shows its progress and can be cancelled; a newer B is never replaced by an older one', async () => {
  const { page } = s.browser;
  const tmp = tempDir();
  fs.cpSync(fixture('sharded'), path.join(tmp.dir, 'sharded'), { recursive: true });
  // Every response held back 150 ms: the index, then its shards, take a while.
  const slow = await startServer({ root: tmp.dir, port: 0, cors: true, delay: 150 });
  try {
    const v = new Viewer(page, s.srv.url);
    await v.open();
    await v.tab('diff');
    const index = slow.url + 'sharded/model.safetensors.index.json';
    await page.locator('[data-testid=vs-url]').fill(index);
    await page.locator('[data-testid=vs-open]').click();
    await page.locator('[data-testid=vs-loading]').waitFor();
    await page.locator('[data-testid=vs-cancel]').click();
    await page.locator('[data-testid=vs-loading]').waitFor({ state: 'detached' });
    const asked = slow.requests.length;
    await page.waitForTimeout(1000);
    assert.equal(slow.requests.length, asked, 'no request after the cancel');
    assert.equal(await page.locator('[data-testid=vs-source]').count(), 0);
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    // A slow B, then a local one before it finishes: the local one is B, and stays B.
    await page.locator('[data-testid=vs-open]').click();
    await page.locator('[data-testid=vs-loading]').waitFor();
    await v.pick(fixture('gguf_v3_le.gguf'), 'vs-files');
    await page.waitForFunction(() => document.querySelector('[data-testid=vs-source]')?.textContent === 'gguf_v3_le.gguf');
    await page.waitForTimeout(1500);
    assert.equal(await page.locator('[data-testid=vs-source]').textContent(), 'gguf_v3_le.gguf');
    assert.equal(await page.locator('[data-testid=vs-loading]').count(), 0);
    // The address bar names B once shown: a local B, no `?vs=`; a B by URL, its URL.
    assert.equal(new URL(page.url()).search, '?sample=gguf_v3_le.gguf');
    const sample = new URL('samples/gguf_v3_le.gguf', s.srv.url).href;
    await page.locator('[data-testid=vs-url]').fill(sample);
    await page.locator('[data-testid=vs-open]').click();
    await page.waitForFunction((u) => document.querySelector('[data-testid=vs-source]')?.textContent === u, sample);
    assert.equal(new URL(page.url()).search, `?sample=gguf_v3_le.gguf&vs=${encodeURIComponent(sample)}`);
    assert.deepEqual(s.browser.errors, []);
  } finally {
    await slow.close();
    tmp.cleanup();
  }
});

test('files dropped on the Compare tab open as B, not as a new A', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.tab('diff');
  const bytes = [...fs.readFileSync(fixture('gguf_v3_le.gguf'))];
  const dt = await page.evaluateHandle((b) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(b)], 'dropped.gguf'));
    return dt;
  }, bytes);
  await page.locator('[data-testid=diff-panel]').dispatchEvent('drop', { dataTransfer: dt });
  await page.waitForFunction(() => document.querySelector('[data-testid=vs-source]')?.textContent === 'dropped.gguf');
  assert.equal(await v.text('source'), 'sample: gguf_v3_le.gguf', 'A stays open');
  await page.waitForFunction(() => /^37 same, 0 changed/.test(document.querySelector('[data-testid=diff-summary]')?.textContent ?? ''));
  assert.deepEqual(s.browser.errors, []);
});

test('a B replaced while its metadata arrays are still being compared never shows the old pair', async () => {
  // B is first the sample's twin behind a slow server: comparing its 512-token arrays by their
  // bytes takes several slow round trips. B is replaced by a smaller file meanwhile; the late
  // result for the first pair (its tensor indices are the sample's) must not be shown.
  const tmp = tempDir();
  fs.copyFileSync(path.join(DIST, 'samples', 'tensorscope-sample-16L-Q4_K_M.gguf'), path.join(tmp.dir, 'twin.gguf'));
  const slow = await startServer({ root: tmp.dir, cors: true, delay: 300 });
  try {
    const { page } = s.browser;
    s.browser.errors.length = 0;
    const v = new Viewer(page, s.srv.url);
    await v.open('', { sample: 'tensorscope-sample-16L-Q4_K_M.gguf' });
    await v.tab('diff');
    await page.locator('[data-testid=vs-url]').fill(slow.url + 'twin.gguf');
    await page.locator('[data-testid=vs-open]').click();
    await page.locator('[data-testid=vs-source]').filter({ hasText: 'twin.gguf' }).waitFor();
    const before = slow.requests.length;
    await v.pick(fixture('gguf_v3_le.gguf'), 'vs-files');
    await page.locator('[data-testid=vs-source]').filter({ hasText: 'gguf_v3_le.gguf' }).waitFor();
    // Long enough for the first pair's array reads to finish.
    const until = Date.now() + 8_000;
    while (slow.load.inFlight > 0 && Date.now() < until) await new Promise((ok) => setTimeout(ok, 100));
    await page.waitForTimeout(500);
    assert.ok(slow.requests.length > before || slow.load.max > 0, 'the first pair was being settled');
    await page.locator('[data-testid=diff-changed-only]').uncheck();
    const names = await page.locator('[data-testid=diff-row]').evaluateAll((rows) => rows.map((r) => r.dataset.name));
    assert.ok(names.includes('blk.0.ffn_gate_exps.weight'), 'rows of the new pair (a tensor only the new B has)');
    assert.deepEqual(s.browser.errors, []);
  } finally {
    await slow.close();
    tmp.cleanup();
  }
});
