// Files that hold several separate models (a downloaded repository's quant variants): the
// Variants view lists each with its size, bits per weight and memory to run against a device
// memory, the companions with what they fit; a row opens its variant, and back returns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Viewer, fixture, llamaArch, session, tempDir } from './viewer.mjs';

const s = session();

test('a folder of quant variants opens as a list: memory against the device, companions that fit, a row opens its variant', async () => {
  const tmp = tempDir();
  try {
    // Two models of other people's tools (gguf-py wrote them) and the projector made for one.
    const files = {
      'tiny-Q8_0.gguf': fixture('kinds', 'model.gguf'),
      'other-Q4_K_M.gguf': fixture('gguf_v3_le.gguf'),
      'mmproj-tiny-F16.gguf': fixture('kinds', 'mmproj-fit.gguf'),
      'README.md': null,
    };
    const paths = Object.entries(files).map(([name, from]) => {
      const p = path.join(tmp.dir, name);
      if (from) fs.copyFileSync(from, p);
      else fs.writeFileSync(p, '# tiny\n');
      return p;
    });
    const { page } = s.browser;
    const v = new Viewer(page, s.srv.url);
    await v.open();
    await v.pick(paths);
    await page.locator('[data-testid=variants]').waitFor();
    const rows = page.locator('[data-testid=variant-row]');
    assert.equal(await rows.count(), 2);
    const names = await rows.evaluateAll((r) => r.map((x) => x.dataset.name));
    const sizes = ['other-Q4_K_M.gguf', 'tiny-Q8_0.gguf'].map((n) => fs.statSync(path.join(tmp.dir, n)).size);
    assert.deepEqual(names, sizes[0] <= sizes[1] ? ['Q4_K_M', 'Q8_0'] : ['Q8_0', 'Q4_K_M'], 'smallest first');
    const fits = page.locator('[data-testid=companion][data-name=mmproj-tiny-F16] [data-testid=companion-fits]');
    assert.equal(await fits.textContent(), 'fits Q8_0');
    // The first difference from the variant it does not fit (the llama model, 32 wide).
    const miss = page.locator('[data-testid=companion][data-name=mmproj-tiny-F16] [data-testid=companion-mismatch]');
    assert.match(await miss.textContent(), /^does not fit Q4_K_M: .*projects into 64-wide embeddings/);
    assert.match(await page.locator('[data-testid=other-files]').textContent(), /README\.md/);
    // Memory against a device: a tiny one fits nothing that can be estimated, a big one fits it.
    const q8 = page.locator('[data-testid=variant-row][data-name=Q8_0]');
    const memory = await q8.locator('[data-testid=variant-memory]').textContent();
    assert.notEqual(memory, '-', 'the gemma3 model has an estimate');
    await page.locator('[data-testid=variants-device]').fill('0.000001');
    assert.equal(await q8.locator('[data-testid=variant-fits]').textContent(), 'does not fit');
    await page.locator('[data-testid=variants-device]').fill('1');
    assert.equal(await q8.locator('[data-testid=variant-fits]').textContent(), 'fits');
    // A longer context and a smaller cache type change the memory.
    await page.locator('[data-testid=variants-context]').fill('32768');
    await page.locator('[data-testid=variants-context]').dispatchEvent('change');
    const longer = await q8.locator('[data-testid=variant-memory]').textContent();
    assert.notEqual(longer, memory);
    await page.locator('[data-testid=variants-cache]').selectOption('q4_0');
    assert.notEqual(await q8.locator('[data-testid=variant-memory]').textContent(), longer);
    // The row opens its variant with every view; back returns to the list.
    await q8.click();
    await v.waitLoaded('variant Q8_0');
    assert.equal(await v.text('summary-tensors'), '4');
    // Its summary, memory-to-run table included, fits a 390 px screen too.
    await page.locator('[data-testid=kv-table]').waitFor();
    await page.setViewportSize({ width: 390, height: 800 });
    const summaryOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(summaryOverflow <= 0, `the summary overflows by ${summaryOverflow} px`);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.locator('[data-testid=variants-back]').click();
    await page.locator('[data-testid=variants]').waitFor();
    assert.equal(await rows.count(), 2);
    // Nothing in the view overflows a 390 px screen.
    await page.setViewportSize({ width: 390, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `overflows by ${overflow} px`);
    await page.setViewportSize({ width: 1280, height: 800 });
    // One model with its projector is still one checkpoint.
    await v.pick([path.join(tmp.dir, 'tiny-Q8_0.gguf'), path.join(tmp.dir, 'mmproj-tiny-F16.gguf')]);
    await v.waitLoaded('2 files');
    assert.equal(await page.locator('[data-testid=variants]').count(), 0);
    assert.equal(await page.locator('[data-testid=variants-back]').count(), 0);
    assert.deepEqual(s.browser.errors, []);
  } finally {
    tmp.cleanup();
  }
});

test("variants that cannot run the context picked, or keep no cache, say so: GPT-2's learned positions, Mamba's state", async () => {
  const tmp = tempDir();
  try {
    const { page } = s.browser;
    const v = new Viewer(page, s.srv.url);
    await v.open();
    const memory = (row) => row.locator('[data-testid=variant-memory]').textContent();
    const context = async (n) => {
      await page.locator('[data-testid=variants-context]').fill(String(n));
      await page.locator('[data-testid=variants-context]').dispatchEvent('change');
    };
    // llama.cpp's own GPT-2 test model (256 learned positions), as two quants of a repository.
    await v.pick(['gpt2-Q8_0.gguf', 'gpt2-F16.gguf'].map((n) => llamaArch('gpt2-dense.gguf', path.join(tmp.dir, n))));
    await page.locator('[data-testid=variants]').waitFor();
    const gpt2 = page.locator('[data-testid=variant-row][data-name=Q8_0]');
    assert.equal(await memory(gpt2), 'runs at most 256 tokens');
    await page.locator('[data-testid=variants-device]').fill('100');
    assert.equal(await gpt2.locator('[data-testid=variant-fits]').textContent(), 'context too long');
    await context(256);
    assert.match(await memory(gpt2), /^[\d.]+ MB$/);
    assert.equal(await gpt2.locator('[data-testid=variant-fits]').textContent(), 'fits');
    // Mamba keeps a state and no cache: the same memory at every context, and known.
    await v.pick(['mamba-Q8_0.gguf', 'mamba-F16.gguf'].map((n) => llamaArch('mamba-dense.gguf', path.join(tmp.dir, n))));
    await page.locator('[data-testid=variant-row][data-name=F16]').waitFor();
    const mamba = page.locator('[data-testid=variant-row][data-name=Q8_0]');
    await context(4096);
    const at4096 = await memory(mamba);
    assert.match(at4096, /^[\d.]+ MB$/);
    await context(32768);
    assert.equal(await memory(mamba), at4096);
    assert.deepEqual(s.browser.errors, []);
  } finally {
    tmp.cleanup();
  }
});
