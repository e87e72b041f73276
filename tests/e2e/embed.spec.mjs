// Embedding: www/model-card.html, the viewer and the checkpoint served from three origins; the
// <tensor-scope> element renders the compact embed mode and a histogram on click.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serveDist, launch, screenshot, REPO } from './helpers.mjs';
import { startServer } from './server.mjs';
import { fixture, tempDir } from './viewer.mjs';

let card; // the model card page
let app; // the viewer
let files; // the checkpoint (Range + CORS)
let browser;
let tmp;
before(async () => {
  tmp = tempDir();
  fs.mkdirSync(path.join(tmp.dir, 'card'));
  fs.mkdirSync(path.join(tmp.dir, 'files'));
  fs.copyFileSync(fixture('gguf_v3_le.gguf'), path.join(tmp.dir, 'files', 'model.gguf'));
  app = await serveDist();
  files = await startServer({ root: path.join(tmp.dir, 'files'), port: 0, cors: true });
  // The example page as shipped, pointed at the other two origins.
  const html = fs
    .readFileSync(path.join(REPO, 'www', 'model-card.html'), 'utf8')
    .replace('src="embed.js"', `src="${app.url}embed.js"`)
    .replace('src="samples/gguf_v3_le.gguf"', `src="${files.url}model.gguf"`);
  assert.ok(html.includes(app.url) && html.includes(files.url));
  fs.writeFileSync(path.join(tmp.dir, 'card', 'index.html'), html);
  fs.copyFileSync(path.join(REPO, 'www', 'favicon.svg'), path.join(tmp.dir, 'card', 'favicon.ico'));
  card = await startServer({ root: path.join(tmp.dir, 'card'), port: 0 });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  for (const s of [card, app, files]) await s?.close();
  tmp?.cleanup();
});

test('a model card on one origin embeds the viewer from another, reading a checkpoint from a third', async () => {
  const { page } = browser;
  assert.equal(new Set([card.port, app.port, files.port]).size, 3);
  await page.setViewportSize({ width: 1000, height: 900 });
  await page.goto(card.url);
  const frame = page.frameLocator('tensor-scope >> iframe');
  await frame.locator('[data-testid=source]').waitFor({ timeout: 20_000 });
  assert.equal(await frame.locator('[data-testid=summary-tensors]').textContent(), '37');
  assert.ok((await frame.locator('[data-testid=dtype-row]').count()) > 0, 'the quant mix');
  // Compact: no drop zone, only the summary and tensor tabs.
  assert.equal(await frame.locator('[data-testid=drop-zone]').count(), 0);
  assert.deepEqual(await frame.locator('[role=tab]').evaluateAll((els) => els.map((e) => e.dataset.testid)), ['tab-summary', 'tab-tensors']);
  // It fills the element's box.
  const box = await page.locator('tensor-scope').boundingBox();
  const fbox = await page.locator('tensor-scope >> iframe').boundingBox();
  assert.ok(Math.abs(box.height - fbox.height) <= 2 && box.height >= 500, `${box.height} vs ${fbox.height}`);
  // Histogram on click.
  await frame.locator('[data-testid=tab-tensors]').click();
  await frame.locator('[data-testid=table-search]').fill('blk.0.attn_q.weight');
  await frame.locator('[data-testid=tensor-row][data-name="blk.0.attn_q.weight"]').click();
  await frame.locator('[data-testid=histogram]').waitFor({ timeout: 30_000 });
  // Three origins were involved: the card, the viewer, the checkpoint (by Range only).
  assert.ok(card.requests.some((r) => r.path === '/'));
  assert.ok(app.requests.some((r) => r.path === '/embed.js') && app.requests.some((r) => r.path === '/tensorscope-web_bg.wasm'));
  const gets = files.requests.filter((r) => r.method === 'GET');
  assert.ok(gets.length > 0 && gets.every((r) => r.range && r.status === 206), JSON.stringify(gets));
  await screenshot(page, 'model-card-embed');
  assert.deepEqual(browser.errors, []);

  // The card changes src to something that is not a URL: the viewer says so, and does not
  // keep showing the model it had.
  await page.locator('tensor-scope').evaluate((e) => e.setAttribute('src', 'http://['));
  await frame.locator('[data-testid=error]').filter({ hasText: 'http://[' }).waitFor({ timeout: 15_000 });
});
