// Habits: copy buttons, export report (the JSON of DESIGN.md, as the CLI prints it), themes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Viewer, fixture, session } from './viewer.mjs';
import { REPO } from './helpers.mjs';

const s = session();

test('export report downloads the JSON report; it equals the CLI output but for file paths', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  const download = page.waitForEvent('download');
  await page.locator('[data-testid=export-report]').click();
  const d = await download;
  const text = fs.readFileSync(await d.path(), 'utf8');
  assert.ok(text.endsWith('}\n'));
  const report = JSON.parse(text);
  assert.equal(report.format, 'gguf');
  assert.equal(report.tensors.length, 37);
  assert.deepEqual(Object.keys(report), ['format', 'kind', 'files', 'metadata', 'tensors', 'summary', 'estimate', 'findings']);
  // The newest build of the CLI (a stale release binary would not be the code under test).
  const cli = ['release', 'debug']
    .map((p) => path.join(REPO, 'target', p, 'tensorscope'))
    .filter((p) => fs.existsSync(p))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  if (cli) {
    const f = fixture('gguf_v3_le.gguf');
    // Status 1: the fixture's nested arrays are an error finding (llama.cpp refuses them).
    const run = spawnSync(cli, ['inspect', f, '--json'], { encoding: 'utf8' });
    assert.equal(run.status, 1);
    const out = run.stdout;
    assert.equal(text, out.split(JSON.stringify(f)).join(JSON.stringify('gguf_v3_le.gguf')), 'byte for byte, paths aside');
  }
  assert.deepEqual(s.browser.errors, []);
});

test('copy buttons put the tensor name on the clipboard', async () => {
  const { page, context } = s.browser;
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.srv.url });
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.selectTensor('blk.0.attn_q.weight');
  await page.locator('[data-testid=tensor-detail] [data-testid=copy]').click();
  await page.locator('[data-testid=tensor-detail] [data-testid=copy]').filter({ hasText: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'blk.0.attn_q.weight');
});

test('themes follow the system and can be switched', async () => {
  const { page } = s.browser;
  await page.emulateMedia({ colorScheme: 'dark' });
  const v = new Viewer(page, s.srv.url);
  await v.open();
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await bg(), 'rgb(15, 18, 22)');
  await page.locator('[data-testid=theme]').click(); // light
  assert.equal(await bg(), 'rgb(255, 255, 255)');
  await page.locator('[data-testid=theme]').click(); // dark
  await page.emulateMedia({ colorScheme: 'light' });
  assert.equal(await bg(), 'rgb(15, 18, 22)');
  await page.locator('[data-testid=theme]').click(); // system
  assert.equal(await bg(), 'rgb(255, 255, 255)');
});
