// The small things with big effects: a drop anywhere on the page opens the files (and never
// lets the browser navigate away to them), an open that finishes after a newer one never
// replaces it, and a remote file that changes on the server while open is a clear error, never
// values mixed from two versions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startServer } from './server.mjs';
import { Viewer, fixture, session, tempDir } from './viewer.mjs';

const s = session();
const tmp = tempDir();
after(() => tmp.cleanup());
let slow; // answers every request after 2 s
let files; // Range + CORS
let liar; // answers any range with 16 MiB more than asked

before(async () => {
  fs.copyFileSync(fixture('gguf_v3_le.gguf'), path.join(tmp.dir, 'model.gguf'));
  slow = await startServer({ root: tmp.dir, port: 0, cors: true, delay: 2000 });
  files = await startServer({ root: tmp.dir, port: 0, cors: true });
  fs.writeFileSync(
    path.join(tmp.dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: {}, weight_map: { w: 'file:///etc/passwd' } }),
  );
  liar = http.createServer((req, res) => {
    const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Headers': 'Range, If-Range', 'Access-Control-Expose-Headers': '*' };
    if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
    const a = Number(/bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1] ?? 0);
    const body = Buffer.alloc(16 << 20, 7); // 16 MiB for the 4 KiB asked
    res.writeHead(206, { ...cors, 'Content-Range': `bytes ${a}-${a + body.length - 1}/1000000000` });
    res.end(body);
  });
  await new Promise((ok) => liar.listen(0, '127.0.0.1', ok));
});
after(async () => {
  await slow?.close();
  await files?.close();
  await new Promise((ok) => (liar ? liar.close(ok) : ok()));
});

test('a drop anywhere on the page opens the files, and the browser does not navigate to them', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  const bytes = [...fs.readFileSync(fixture('gguf_all_types.gguf'))];
  const prevented = await page.evaluate((b) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(b)], 'anywhere.gguf'));
    const target = document.querySelector('[data-testid=tagline]'); // outside the drop zone
    const over = new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true });
    const drop = new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true });
    target.dispatchEvent(over);
    target.dispatchEvent(drop);
    return [over.defaultPrevented, drop.defaultPrevented];
  }, bytes);
  assert.deepEqual(prevented, [true, true], 'dragover and drop are taken by the page, not the browser');
  await v.waitLoaded('anywhere.gguf');
  assert.equal(await v.text('summary-tensors'), '34');
  assert.deepEqual(s.browser.errors, []);
});

test('an open that finishes after a newer one never replaces it', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  await page.locator('[data-testid=url-input]').fill(slow.url + 'model.gguf');
  await page.locator('[data-testid=url-open]').click();
  await v.pick(fixture('st_all_numpy_dtypes.safetensors'));
  await v.waitLoaded('st_all_numpy_dtypes.safetensors');
  // Wait past the slow server's answers: the older open must not take over.
  await page.waitForTimeout(5000);
  assert.equal(await v.text('source'), 'st_all_numpy_dtypes.safetensors');
  assert.equal(await v.text('summary-format'), 'safetensors');
});

test('a remote file replaced on the server while open is an error, never mixed bytes', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  const file = path.join(tmp.dir, 'model.gguf');
  fs.copyFileSync(fixture('gguf_v3_le.gguf'), file);
  await v.open(`?url=${encodeURIComponent(files.url + 'model.gguf')}`);
  // Replace the file: new bytes, new size, new validators.
  const changed = Buffer.concat([fs.readFileSync(file), Buffer.alloc(4096, 1)]);
  fs.writeFileSync(file, changed);
  // token_embd.weight lies past the first 4 KiB the probe kept: reading it goes to the server.
  await v.selectTensor('token_embd.weight');
  await page.locator('[data-testid=detail-error]').filter({ hasText: 'changed on the server' }).waitFor({ timeout: 15_000 });
  const ifRange = files.requests.filter((r) => r.path === '/model.gguf').length;
  assert.ok(ifRange >= 2, 'the probe and the value read both went to the server');
});

test('only http, https and hf:// URLs are opened, and an index names only files in its folder', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  for (const bad of ['javascript:alert(1)', 'file:///etc/passwd', 'data:,x']) {
    await page.locator('[data-testid=url-input]').fill(bad);
    await page.locator('[data-testid=url-open]').click();
    await page.locator('[data-testid=error]').filter({ hasText: 'not an http:, https: or hf:// URL' }).waitFor();
  }
  await page.locator('[data-testid=url-input]').fill(files.url + 'model.safetensors.index.json');
  await page.locator('[data-testid=url-open]').click();
  await page.locator('[data-testid=error]').filter({ hasText: "names shard 'file:///etc/passwd', which is not a file in the index's folder" }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});

// (A body longer than its own Content-Range is refused by the browser itself, as a network
// error; the viewer's reader also stops at the confirmed length.)
test('a server that answers with more than the range asked is refused before its body is read', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await v.open();
  const port = liar.address().port;
  await page.locator('[data-testid=url-input]').fill(`http://127.0.0.1:${port}/model.gguf`);
  await page.locator('[data-testid=url-open]').click();
  await page.locator('[data-testid=error]').filter({ hasText: 'does not match the request' }).waitFor({ timeout: 15_000 });
});
