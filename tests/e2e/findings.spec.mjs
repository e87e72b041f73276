// A damaged file still opens: what can be read is shown and its faults are listed as findings,
// linked to the tensor they concern.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { screenshot } from './helpers.mjs';
import { Viewer, fixture, session } from './viewer.mjs';

const s = session({ temp: true });

test('a truncated GGUF shows its findings with rule, location and tensor link', async () => {
  const { page } = s.browser;
  const file = path.join(s.tmp.dir, 'damaged.gguf');
  // Keep the header and cut the tensor data short.
  fs.writeFileSync(file, fs.readFileSync(fixture('gguf_v3_le.gguf')).subarray(0, 9000));
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('damaged.gguf');
  assert.match(await v.text('summary-findings'), /[1-9]\d* errors/);
  await v.tab('findings');
  const errors = page.locator('[data-testid=finding][data-severity=error]');
  assert.ok((await errors.count()) > 0);
  const msg = await errors.first().locator('[data-testid=finding-message]').textContent();
  assert.ok(msg.length > 0);
  await screenshot(page, 'findings');
  const link = page.locator('[data-testid=finding-tensor]:not([disabled])').first();
  const name = await link.textContent();
  await link.click();
  await page.locator('[data-testid=detail-name]').filter({ hasText: name }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});

test('hidden characters in tensor names and metadata are shown as escapes, never reordering the text', async () => {
  const { page } = s.browser;
  const name = 'model.\u202eweight.txt';
  const header = { __metadata__: { ['note\u200b']: 'safe\u2066 text\u{e0041}' }, [name]: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } };
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const file = path.join(s.tmp.dir, 'hidden.safetensors');
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json), Buffer.alloc(8)]));
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('hidden.safetensors');
  await v.tab('tensors');
  const row = page.locator('[data-testid=tensor-row]').first();
  assert.equal(await row.getAttribute('data-name'), name, 'the name itself is kept');
  assert.equal(await row.locator('.name').textContent(), 'model.\\u{202e}weight.txt');
  await row.click();
  assert.equal(await v.text('detail-name'), 'model.\\u{202e}weight.txt');
  await v.tab('metadata');
  assert.deepEqual(await page.locator('[data-testid=meta-key]').allTextContents(), ['note\\u{200b}']);
  assert.equal(await page.locator('[data-testid=meta-text]').textContent(), 'safe\\u{2066} text\\u{e0041}');
  assert.deepEqual(s.browser.errors, []);
});
