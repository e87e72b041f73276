// Every string from a file is rendered as text: HTML and script payloads in tensor names,
// metadata keys and values stay text; nothing executes and nothing is injected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { screenshot } from './helpers.mjs';
import { Viewer, safetensors, session } from './viewer.mjs';

const PAYLOADS = [
  '<img src=x onerror="window.__xss=1">',
  '<script>window.__xss=2</script>',
  '"><svg onload="window.__xss=3">',
  "javascript:window.__xss=4",
];

const s = session({ temp: true });

test('payloads in names and metadata stay text', async () => {
  const { page } = s.browser;
  const file = path.join(s.tmp.dir, 'evil.safetensors');
  const tensors = PAYLOADS.map((p) => ({ name: p, dtype: 'F32', shape: [2], bytes: Buffer.alloc(8) }));
  const metadata = Object.fromEntries(PAYLOADS.map((p, i) => [`${p}key${i}`, `${p}\n${p}`]));
  fs.writeFileSync(file, safetensors(tensors, metadata));
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('evil.safetensors');
  await v.tab('tensors');
  const names = await page.locator('[data-testid=tensor-row] .name').allTextContents();
  assert.deepEqual([...names].sort(), [...PAYLOADS].sort());
  await page.locator('[data-testid=tensor-row]').first().click();
  await v.waitHistogram();
  await v.tab('metadata');
  const values = await page.locator('[data-testid=meta-text]').allTextContents();
  for (const p of PAYLOADS) assert.ok(values.some((t) => t.includes(p)), p);
  await v.tab('findings');
  await screenshot(page, 'xss');
  const injected = await page.evaluate(() => ({
    xss: window.__xss,
    img: document.querySelectorAll('img[src=x]').length,
    script: [...document.querySelectorAll('script')].filter((s) => s.textContent.includes('__xss')).length,
    svg: document.querySelectorAll('svg[onload]').length,
  }));
  assert.deepEqual(injected, { xss: undefined, img: 0, script: 0, svg: 0 });
  assert.deepEqual(s.browser.errors, []);
});
