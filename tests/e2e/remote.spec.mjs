// Remote files over HTTP Range: an index URL opens its shard set (only headers transferred),
// the URL box and ?url=, a histogram read by ranges, a 3 GiB sparse file, and the clear
// messages for a server that ignores Range (200), one without CORS, and one that is down.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { serveDist, launch, notFound, notFoundSorted, COMPANIONS } from './helpers.mjs';
import { startServer, parseRange } from './server.mjs';
import { Viewer, fixture, tempDir, makeBig } from './viewer.mjs';

let app; // the viewer
let files; // checkpoints, Range + CORS
let noRange; // checkpoints, Range ignored (200), CORS
let noCors; // checkpoints, Range but no CORS
let slow; // checkpoints, Range + CORS, every response held back 150 ms
let redirector; // answers every GET with a 302 to the same path on `files`, as the Hub's resolve URLs do
let browser;
let tmp;
let big;
let zeros; // a 16 MiB sparse file, as `big`

before(async () => {
  tmp = tempDir();
  for (const f of fs.readdirSync(fixture('sharded'))) {
    fs.mkdirSync(path.join(tmp.dir, 'sharded'), { recursive: true });
    fs.copyFileSync(fixture('sharded', f), path.join(tmp.dir, 'sharded', f));
  }
  fs.writeFileSync(path.join(tmp.dir, 'sharded', 'config.json'), JSON.stringify({
    model_type: 'qwen3', num_hidden_layers: 2, hidden_size: 64, num_attention_heads: 4, num_key_value_heads: 2,
    head_dim: 32, max_position_embeddings: 4096,
  }));
  // A template file, as today's transformers saves one, and a named template in the tokenizer's
  // config; the set has no generation_config.json (asked for, and answered 404).
  fs.writeFileSync(path.join(tmp.dir, 'sharded', 'chat_template.jinja'), '{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}');
  fs.writeFileSync(path.join(tmp.dir, 'sharded', 'tokenizer_config.json'), JSON.stringify({
    bos_token: '<s>', chat_template: [{ name: 'tool_use', template: '{{ bos_token }}{{ tools | length }} tools' }],
  }));
  fs.copyFileSync(fixture('gguf_v3_le.gguf'), path.join(tmp.dir, 'gguf_v3_le.gguf'));
  big = makeBig(path.join(tmp.dir, 'big.safetensors'));
  app = await serveDist();
  files = await startServer({ root: tmp.dir, port: 0, cors: true });
  noRange = await startServer({ root: tmp.dir, port: 0, cors: true, range: false });
  noCors = await startServer({ root: tmp.dir, port: 0 });
  slow = await startServer({ root: tmp.dir, port: 0, cors: true, delay: 150 });
  // About 16 MiB of F32 zeros (sparse): a whole-tensor histogram of it is several orders.
  zeros = makeBig(path.join(tmp.dir, 'zeros.safetensors'), 16 << 20);
  redirector = http.createServer((req, res) => {
    const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Headers': 'Range', 'Access-Control-Expose-Headers': '*' };
    if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
    res.writeHead(302, { ...cors, Location: new URL(req.url.slice(1), files.url).href }).end();
  });
  await new Promise((ok) => redirector.listen(0, '127.0.0.1', ok));
  browser = await launch();
});
after(async () => {
  await browser?.close();
  for (const s of [app, files, noRange, noCors, slow]) await s?.close();
  await new Promise((ok) => (redirector ? redirector.close(ok) : ok()));
  tmp?.cleanup();
});

const transferred = (page) =>
  page.locator('[data-testid=transferred]').evaluate((e) => ({ bytes: Number(e.dataset.bytes), requests: Number(e.dataset.requests) }));

test('?url= to an index opens the whole shard set from another origin, reading only headers', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  const index = files.url + 'sharded/model.safetensors.index.json';
  files.requests.length = 0;
  await v.open(`?url=${encodeURIComponent(index)}`);
  assert.equal(await v.text('summary-format'), 'safetensors');
  assert.equal(await v.text('summary-files'), '2');
  const expected = JSON.parse(fs.readFileSync(fixture('sharded', 'model.safetensors.index.json'), 'utf8'));
  // The config.json beside the index is fetched too, and sizes the cache.
  assert.match(await v.text('estimate-about'), /qwen3 · from config\.json · 2 layers/);
  const f16 = page.locator('[data-testid=kv-row][data-context="4096"] [data-testid=kv-bytes][data-type=f16]');
  assert.equal(await f16.getAttribute('title'), String(2 * 2 * 2 * 32 * 2 * 4096));
  await v.tab('tensors');
  const n = Object.keys(expected.weight_map).length;
  assert.equal(await page.locator('[data-testid=table-count]').textContent(), `${n} of ${n} tensors`);
  // The templates beside the index are read too: the template file's, then the tokenizer
  // config's named one, each rendered with the config's BOS.
  await v.tab('tokenizer');
  const names = page.locator('[data-testid=template]');
  await names.nth(1).waitFor();
  assert.deepEqual(await names.evaluateAll((ts) => ts.map((t) => t.dataset.name)), ['default', 'tool_use']);
  assert.match(await page.locator('[data-testid=template][data-name=default]').textContent(), /chat_template\.jinja/);
  // Every request carried a Range and got 206, but for the companion the set does not have:
  // each asked for once, beside the index; the rarer ones not at all.
  assert.ok(files.requests.length >= 3, JSON.stringify(files.requests));
  const absent = ['generation_config.json'];
  for (const r of files.requests.filter((r) => r.method === 'GET')) {
    assert.match(r.range ?? '', /^bytes=\d+-\d+$/, JSON.stringify(r));
    const missing = absent.some((name) => r.path === `/sharded/${name}`);
    assert.equal(r.status, missing ? 404 : 206, r.path);
  }
  for (const name of [...absent, 'config.json', 'tokenizer_config.json', 'chat_template.jinja']) {
    assert.equal(files.requests.filter((r) => r.path === `/sharded/${name}`).length, 1, name);
  }
  for (const name of ['hf_quant_config.json', 'adapter_config.json', 'chat_template.json']) {
    assert.equal(files.requests.filter((r) => r.path === `/sharded/${name}`).length, 0, name);
  }
  // The browser reports the 404 in its console, and nothing else.
  assert.deepEqual(notFound(browser.errors), { missing: absent, other: [] });
  browser.errors.length = 0;
  // The bytes shown as transferred: no more than the files hold (they are small), and counted.
  const t = await transferred(page);
  const total = fs.readdirSync(fixture('sharded')).reduce((s, f) => s + fs.statSync(fixture('sharded', f)).size, 0);
  assert.ok(t.bytes > 0 && t.bytes <= total, `${t.bytes} of ${total}`);
  assert.equal(t.requests, files.requests.filter((r) => r.method === 'GET').length);
  assert.deepEqual(browser.errors, []);
});

test('a host that serves its site for files it does not have: the companions answered with the page are absent', async () => {
  const { page } = browser;
  const dir = path.join(tmp.dir, 'site-set');
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ['model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']) {
    fs.copyFileSync(fixture('sharded', f), path.join(dir, f));
  }
  fs.copyFileSync(path.join(tmp.dir, 'sharded', 'config.json'), path.join(dir, 'config.json'));
  fs.writeFileSync(path.join(tmp.dir, 'site.html'), '<!DOCTYPE html>\n<html><body>{{ not a template }}</body></html>\n');
  const site = await startServer({ root: tmp.dir, port: 0, cors: true, fallback: 'site.html' });
  try {
    const v = new Viewer(page, app.url);
    await v.open(`?url=${encodeURIComponent(site.url + 'site-set/model.safetensors.index.json')}`);
    assert.equal(await v.text('summary-files'), '2');
    assert.match(await v.text('estimate-about'), /qwen3 · from config\.json · 2 layers/);
    // The three other companions came back 200, as the site's page: none is a template or a
    // config that is not JSON.
    const pages = site.requests.filter((r) => /generation_config|tokenizer_config|chat_template/.test(r.path));
    assert.deepEqual(pages.map((r) => r.status), [206, 206, 206]);
    await v.tab('findings');
    const codes = await page.locator('[data-testid=finding-code]').allTextContents();
    assert.ok(!codes.includes('config.not_json'), codes.join());
    // No template, nor any tokenizer fact: the viewer has no tokenizer tab to show.
    assert.equal(await page.locator('[data-testid=tab-tokenizer]').count(), 0);
    assert.deepEqual(browser.errors, []);
  } finally {
    await site.close();
  }
});

test('a single file by URL brings the configs beside it; a PEFT adapter its adapter config', async () => {
  const { page } = browser;
  const dir = path.join(tmp.dir, 'single');
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(fixture('sharded', 'model-00001-of-00002.safetensors'), path.join(dir, 'model.safetensors'));
  fs.copyFileSync(path.join(tmp.dir, 'sharded', 'config.json'), path.join(dir, 'config.json'));
  fs.copyFileSync(path.join(tmp.dir, 'sharded', 'tokenizer_config.json'), path.join(dir, 'tokenizer_config.json'));
  files.requests.length = 0;
  const v = new Viewer(page, app.url);
  await v.open(`?url=${encodeURIComponent(files.url + 'single/model.safetensors')}`);
  assert.equal(await v.text('summary-files'), '1');
  assert.match(await v.text('estimate-about'), /qwen3 · from config\.json · 2 layers/);
  await v.tab('tokenizer');
  await page.locator('[data-testid=template][data-name=tool_use]').waitFor();
  // Each companion asked for once, beside the file; the two the folder does not have are 404s.
  const absent = ['generation_config.json', 'chat_template.jinja'];
  for (const name of [...absent, 'config.json', 'tokenizer_config.json']) {
    const asked = files.requests.filter((r) => r.path === `/single/${name}`);
    assert.deepEqual(asked.map((r) => r.status), [absent.includes(name) ? 404 : 206], name);
  }
  assert.deepEqual(notFound(browser.errors), { missing: absent, other: [] });
  browser.errors.length = 0;

  // A config given by URL is not asked for again beside the file.
  files.requests.length = 0;
  const config = files.url + 'sharded/config.json';
  await v.open(`?url=${encodeURIComponent(files.url + 'single/model.safetensors')}&url=${encodeURIComponent(config)}`);
  assert.match(await v.text('estimate-about'), /qwen3 · from config\.json · 2 layers/);
  assert.equal(files.requests.filter((r) => r.path === '/single/config.json').length, 0);
  browser.errors.length = 0;

  // Files of weights from two folders: their configs would be taken for one another's, and none
  // is asked for.
  files.requests.length = 0;
  const shard = files.url + 'sharded/model-00002-of-00002.safetensors';
  await v.open(`?url=${encodeURIComponent(files.url + 'single/model.safetensors')}&url=${encodeURIComponent(shard)}`);
  assert.equal(await v.text('summary-files'), '2');
  assert.deepEqual(files.requests.filter((r) => r.method === 'GET' && r.path.endsWith('.json')), []);
  assert.deepEqual(browser.errors, []);

  // PEFT's adapter brings its adapter config (alpha and base model), and not the folder's config.
  const peft = path.join(tmp.dir, 'peft');
  fs.mkdirSync(peft, { recursive: true });
  for (const f of ['adapter_model.safetensors', 'adapter_config.json']) fs.copyFileSync(fixture('kinds', 'peft', f), path.join(peft, f));
  fs.copyFileSync(path.join(tmp.dir, 'sharded', 'config.json'), path.join(peft, 'config.json'));
  files.requests.length = 0;
  await v.open(`?url=${encodeURIComponent(files.url + 'peft/adapter_model.safetensors')}`);
  const kind = page.locator('[data-testid=summary-kind]');
  assert.equal(await kind.getAttribute('data-kind'), 'adapter');
  assert.match(await kind.textContent(), /LoRA \(PEFT\), rank 4\/8, alpha 16, 4 modules, base example\/kinds-fixture-1b/);
  assert.deepEqual(files.requests.filter((r) => r.method === 'GET').map((r) => r.path).sort(),
    ['/peft/adapter_config.json', '/peft/adapter_model.safetensors']);
  assert.deepEqual(browser.errors, []);
});

test('a shard the server does not have is a finding, and the rest of the set opens', async () => {
  const { page } = browser;
  const dir = path.join(tmp.dir, 'one-missing');
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ['model.safetensors.index.json', 'model-00001-of-00002.safetensors']) {
    fs.copyFileSync(fixture('sharded', f), path.join(dir, f));
  }
  const v = new Viewer(page, app.url);
  await v.open(`?url=${encodeURIComponent(files.url + 'one-missing/model.safetensors.index.json')}`);
  assert.equal(await v.text('summary-files'), '1');
  const index = JSON.parse(fs.readFileSync(fixture('sharded', 'model.safetensors.index.json'), 'utf8'));
  const inFirst = Object.values(index.weight_map).filter((s) => s === 'model-00001-of-00002.safetensors').length;
  await v.tab('tensors');
  assert.equal(await page.locator('[data-testid=table-count]').textContent(), `${inFirst} of ${inFirst} tensors`);
  await v.tab('findings');
  const codes = await page.locator('[data-testid=finding-code]').allTextContents();
  assert.ok(codes.includes('remote.unreadable_shard') && codes.includes('set.missing_shard'), codes.join(' '));
  const unreadable = page.locator('[data-testid=finding]', { hasText: 'remote.unreadable_shard' });
  assert.match(await unreadable.textContent(), /shard model-00002-of-00002\.safetensors could not be read \(.*404.*\)/);
  // No shard at all: nothing to show, and the open fails with the reason.
  fs.rmSync(path.join(dir, 'model-00001-of-00002.safetensors'));
  const msg = await openError(page, files.url + 'one-missing/model.safetensors.index.json');
  assert.match(msg, /404/);
  browser.errors.length = 0;
});

test('an open under way can be cancelled: its requests stop and what was shown stays', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  await v.open();
  const shown = await v.text('source');
  // Every response held back 150 ms: the index, then its shards, take a while.
  slow.requests.length = 0;
  await page.locator('[data-testid=url-input]').fill(slow.url + 'sharded/model.safetensors.index.json');
  await page.locator('[data-testid=url-open]').click();
  await page.locator('[data-testid=loading]').waitFor();
  await page.locator('[data-testid=open-cancel]').click();
  await page.locator('[data-testid=loading]').waitFor({ state: 'detached' });
  const asked = slow.requests.length;
  await page.waitForTimeout(1000);
  assert.equal(slow.requests.length, asked, 'no request after the cancel');
  assert.equal(await v.text('source'), shown);
  assert.equal(await page.locator('[data-testid=error]').count(), 0);
  assert.equal(await v.text('summary-tensors'), '37');
  // The address bar still names what is shown, not the cancelled URL.
  assert.equal(new URL(page.url()).search, '?sample=gguf_v3_le.gguf');
  assert.deepEqual(browser.errors, []);
});

test('the address bar names what is shown: not a URL that failed, nor one a local file replaced', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  const good = files.url + 'gguf_v3_le.gguf';
  const vs = `vs=${encodeURIComponent(good)}`;
  await v.open(`?url=${encodeURIComponent(good)}&${vs}#tensor=blk.0.attn_q.weight`);
  const shown = new URL(page.url());
  assert.equal(shown.searchParams.getAll('url').join(' '), good);
  // A URL that fails to open leaves the address of the checkpoint still shown.
  await page.locator('[data-testid=url-input]').fill(files.url + 'no-such.gguf');
  await page.locator('[data-testid=url-open]').click();
  await page.locator('[data-testid=error]').waitFor();
  assert.equal(await v.text('source'), good);
  assert.equal(page.url(), shown.href);
  // A local file replaces it: no `?url=` to reopen the remote one on reload; `vs` stays.
  await v.pick(fixture('gguf_v3_le.gguf'));
  await v.waitLoaded('gguf_v3_le.gguf');
  assert.equal(new URL(page.url()).search, `?${vs}`);
  // A built-in sample that is not the default is named by `?sample=`, replacing nothing else.
  await page.locator('[data-testid=sample]', { hasText: 'gguf_all_types' }).click();
  await v.waitLoaded('sample: gguf_all_types.gguf');
  assert.equal(new URL(page.url()).search, `?${vs}&sample=gguf_all_types.gguf`);
  await page.reload();
  await v.waitLoaded('sample: gguf_all_types.gguf');
  browser.errors.length = 0;
});

test('redirects are followed, as from a Hub resolve URL to its storage', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  const url = `http://127.0.0.1:${redirector.address().port}/gguf_v3_le.gguf`;
  files.requests.length = 0;
  await v.open(`?url=${encodeURIComponent(url)}`);
  assert.equal(await v.text('summary-format'), 'gguf');
  assert.equal(await v.text('summary-tensors'), '37');
  const gets = files.requests.filter((r) => r.method === 'GET');
  assert.ok(gets.length >= 1 && gets.every((r) => r.status === 206), JSON.stringify(gets));
});

test('the URL box opens a GGUF by URL and a histogram is read by ranges', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  await v.open();
  const url = files.url + 'gguf_v3_le.gguf';
  await page.locator('[data-testid=url-input]').fill(url);
  await page.locator('[data-testid=url-open]').click();
  await v.waitLoaded(url);
  assert.equal(await v.text('summary-tensors'), '37');
  assert.ok(page.url().includes('url=' + encodeURIComponent(url)), `shareable: ${page.url()}`);
  await v.tab('findings');
  const codes = await page.locator('[data-testid=finding-code]').allTextContents();
  assert.ok(!codes.includes('remote.unpinned'), 'a server sending ETag and Last-Modified pins the file');
  await v.tab('tensors');
  await v.selectTensor('blk.0.attn_q.weight');
  await v.waitHistogram();
  const t = await transferred(page);
  // The header, then the tensor's bytes (some re-read): bounded by twice this small file.
  assert.ok(t.bytes > 4096 && t.bytes <= 2 * fs.statSync(fixture('gguf_v3_le.gguf')).size, `${t.bytes}`);
  assert.deepEqual(browser.errors, []);
});

test('a 3 GiB sparse file opens over Range and decodes values past 2 GiB', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  await v.open(`?url=${encodeURIComponent(files.url + 'big.safetensors')}`);
  assert.equal(await v.text('summary-tensors'), '2');
  const t = await transferred(page);
  assert.ok(t.bytes <= 16 * 1024, `only the header: ${t.bytes} bytes`);
  await v.selectTensor('tail');
  await v.waitHistogram();
  await page.locator('[data-testid=range-input]').fill(`${big.tailElems - 1000}:${big.tailElems}`);
  await page.locator('[data-testid=run-hist]').click();
  await page.waitForFunction(() => /elements/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
  assert.equal(await v.text('stat-count'), '1000');
  assert.equal(await v.text('stat-zeros'), '1000');
  const ranged = files.requests.filter((r) => r.path === '/big.safetensors' && r.range);
  assert.ok(ranged.some((r) => Number(/bytes=(\d+)/.exec(r.range)[1]) > 2 ** 31), 'read past 2 GiB');
  // A sample of the tensor (a few MB) and the 1000 elements: far less than the file.
  assert.ok((await transferred(page)).bytes < 16 * 1024 * 1024, 'far less than the file');
  // The folder has none of the configs asked for beside the file.
  assert.deepEqual(notFoundSorted(browser.errors), { missing: [...COMPANIONS].sort(), other: [] });
  browser.errors.length = 0;
});

test('a whole-tensor histogram keeps more reads in flight than there are workers', async () => {
  const { page } = browser;
  const v = new Viewer(page, app.url);
  await v.open(`?url=${encodeURIComponent(slow.url + 'zeros.safetensors')}`);
  await v.selectTensor('tail');
  await v.waitHistogram();
  slow.load.max = 0;
  await page.locator('[data-testid=sel-whole]').check();
  await page.locator('[data-testid=run-hist]').click();
  await page.waitForFunction(() => /whole tensor/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''));
  assert.equal(await v.text('stat-zeros'), String(zeros.tailElems));
  const workers = Number(await page.locator('[data-testid=hist-what]').getAttribute('data-workers'));
  // Each worker reads for several orders at once.
  assert.ok(workers >= 1 && slow.load.max > workers, `${slow.load.max} requests at once on ${workers} workers`);
  assert.deepEqual(notFoundSorted(browser.errors), { missing: [...COMPANIONS].sort(), other: [] });
  browser.errors.length = 0;
});

async function openError(page, url, timeout = 15_000) {
  const v = new Viewer(page, app.url);
  await page.goto(app.url + `?url=${encodeURIComponent(url)}`);
  await page.locator('[data-testid=error]').waitFor({ timeout });
  void v;
  return page.locator('[data-testid=error]').textContent();
}

test('a server that ignores Range is detected at once and the download aborted', async () => {
  const { page } = browser;
  noRange.requests.length = 0;
  const msg = await openError(page, noRange.url + 'big.safetensors');
  assert.match(msg, /does not support range requests/);
  const gets = noRange.requests.filter((r) => r.method === 'GET');
  assert.equal(gets.length, 1, 'one request, then stop');
  assert.equal(gets[0].status, 200);
});

test('CORS and network failures get their own messages', async () => {
  const { page } = browser;
  let msg = await openError(page, noCors.url + 'gguf_v3_le.gguf');
  assert.match(msg, /blocked by CORS/);
  assert.match(msg, /Access-Control-Allow-Origin/);
  const dead = await startServer({ root: tmp.dir, port: 0 });
  const deadUrl = dead.url;
  await dead.close();
  msg = await openError(page, deadUrl + 'gguf_v3_le.gguf');
  assert.match(msg, /network error/);
});

/** A server on a free port answering every request with `handle(req, res)`; CORS for all. */
async function rawServer(handle) {
  const srv = http.createServer((req, res) => {
    const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Headers': 'Range', 'Access-Control-Expose-Headers': '*' };
    if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
    handle(req, res, cors);
  });
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${srv.address().port}/`;
  // Connections held open by the handlers are cut when the test ends.
  return { url, close: () => new Promise((ok) => { srv.closeAllConnections(); srv.close(ok); }) };
}

test('a response that holds its connection open after the bytes asked for still opens the file', async () => {
  const bytes = fs.readFileSync(path.join(tmp.dir, 'gguf_v3_le.gguf'));
  // Each range is sent whole, then the response promises more and never ends.
  const lingering = await rawServer((req, res, cors) => {
    const r = parseRange(req.headers.range, bytes.length);
    res.writeHead(206, { ...cors, 'Content-Range': `bytes ${r.start}-${r.end}/${bytes.length}`, 'Content-Length': String(r.end - r.start + 1 + 1000) });
    res.write(bytes.subarray(r.start, r.end + 1));
  });
  try {
    const { page } = browser;
    const v = new Viewer(page, app.url);
    const url = lingering.url + 'gguf_v3_le.gguf';
    await page.goto(app.url + `?url=${encodeURIComponent(url)}`);
    await v.waitLoaded(url);
    assert.equal(await v.text('summary-tensors'), '37');
    // It sends no ETag or Last-Modified: only the size pins the file, and the findings say so.
    await v.tab('findings');
    const codes = await page.locator('[data-testid=finding-code]').allTextContents();
    assert.ok(codes.includes('remote.unpinned'), codes.join(' '));
  } finally {
    await lingering.close();
  }
});

test('a server that never answers ends the open with an error, not a wait without end', async () => {
  const silent = await rawServer(() => {});
  try {
    const msg = await openError(browser.page, silent.url + 'gguf_v3_le.gguf', 60_000);
    assert.match(msg, /no answer in 20 s/);
  } finally {
    await silent.close();
  }
});

test('shards named by a Hub index, and the config beside a file, are read at the commit the file was read at', async () => {
  const sha = '0123456789abcdef0123456789abcdef01234567';
  const root = path.join(tmp.dir, 'hub');
  // The branch holds only the index (its shards moved on); the commit holds index and shards.
  for (const rev of ['main', sha]) fs.mkdirSync(path.join(root, 'o', 'r', 'resolve', rev), { recursive: true });
  for (const f of fs.readdirSync(fixture('sharded'))) {
    fs.copyFileSync(fixture('sharded', f), path.join(root, 'o', 'r', 'resolve', sha, f));
  }
  fs.copyFileSync(fixture('sharded', 'model.safetensors.index.json'), path.join(root, 'o', 'r', 'resolve', 'main', 'model.safetensors.index.json'));
  const served = [];
  const hub = await rawServer((req, res, cors) => {
    const file = path.join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    served.push(req.url);
    if (!file.startsWith(root) || !fs.existsSync(file)) return res.writeHead(404, cors).end();
    const bytes = fs.readFileSync(file);
    const r = parseRange(req.headers.range, bytes.length);
    res.writeHead(206, { ...cors, 'Content-Range': `bytes ${r.start}-${r.end}/${bytes.length}`, 'X-Repo-Commit': sha, ETag: '"e"' });
    res.end(bytes.subarray(r.start, r.end + 1));
  });
  try {
    const { page } = browser;
    const v = new Viewer(page, app.url);
    const url = hub.url + 'o/r/resolve/main/model.safetensors.index.json';
    await v.open(`?url=${encodeURIComponent(url)}`);
    assert.equal(await v.text('summary-files'), '2');
    const shards = served.filter((u) => u.endsWith('.safetensors'));
    assert.ok(shards.length >= 2 && shards.every((u) => u.includes(`/resolve/${sha}/`)), served.join(' '));
    // A shard given by URL with its index is read once: the branch's, which the index's
    // rewritten URL at the commit would have read a second time.
    fs.copyFileSync(fixture('sharded', 'model-00001-of-00002.safetensors'), path.join(root, 'o', 'r', 'resolve', 'main', 'model-00001-of-00002.safetensors'));
    served.length = 0;
    const first = hub.url + 'o/r/resolve/main/model-00001-of-00002.safetensors';
    await v.open(`?url=${encodeURIComponent(url)}&url=${encodeURIComponent(first)}`);
    assert.equal(await v.text('summary-files'), '2');
    assert.ok(!served.some((u) => u.includes(`/resolve/${sha}/model-00001`)), served.join(' '));
    await v.tab('findings');
    const codes = await page.locator('[data-testid=finding-code]').allTextContents();
    assert.ok(!codes.includes('set.duplicate_tensor'), codes.join(' '));
    // A single file read on the branch brings the config of its commit (the branch has none).
    fs.copyFileSync(fixture('sharded', 'model-00001-of-00002.safetensors'), path.join(root, 'o', 'r', 'resolve', 'main', 'model.safetensors'));
    fs.copyFileSync(path.join(tmp.dir, 'sharded', 'config.json'), path.join(root, 'o', 'r', 'resolve', sha, 'config.json'));
    served.length = 0;
    await v.open(`?url=${encodeURIComponent(hub.url + 'o/r/resolve/main/model.safetensors')}`);
    assert.match(await v.text('estimate-about'), /qwen3 · from config\.json · 2 layers/);
    assert.ok(served.includes(`/o/r/resolve/${sha}/config.json`), served.join(' '));
    assert.ok(!served.some((u) => u.startsWith('/o/r/resolve/main/config')), served.join(' '));
    browser.errors.length = 0;
  } finally {
    await hub.close();
  }
});

test('cancelling a histogram whose reads the server stalls stops it at once, not after the stall', async () => {
  const bytes = fs.readFileSync(path.join(tmp.dir, 'gguf_v3_le.gguf'));
  // The open's requests are answered; every later one is left hanging (and noted when the
  // browser gives up on it).
  let answered = 0;
  const hanging = [];
  const stalling = await rawServer((req, res, cors) => {
    if (answered >= 2) {
      const h = { closed: false };
      hanging.push(h);
      res.on('close', () => (h.closed = true));
      return;
    }
    answered += 1;
    const r = parseRange(req.headers.range, bytes.length);
    res.writeHead(206, { ...cors, 'Content-Range': `bytes ${r.start}-${r.end}/${bytes.length}`, ETag: '"e"' });
    res.end(bytes.subarray(r.start, r.end + 1));
  });
  try {
    const { page } = browser;
    const v = new Viewer(page, app.url);
    const url = stalling.url + 'gguf_v3_le.gguf';
    await page.goto(app.url + `?url=${encodeURIComponent(url)}`);
    await v.waitLoaded(url);
    assert.equal(answered, 2, 'the header took two requests');
    await v.selectTensor('blk.0.attn_q.weight');
    // Its values are being read: the request hangs on the server.
    for (const until = Date.now() + 10_000; hanging.length === 0 && Date.now() < until; ) await new Promise((ok) => setTimeout(ok, 20));
    await page.locator('[data-testid=cancel]').click({ timeout: 10_000 });
    await page.locator('[data-testid=detail-error]').filter({ hasText: 'cancelled' }).waitFor({ timeout: 5_000 });
    // The requests under way are aborted, well inside the 20 s a stalled one takes to time out.
    assert.ok(hanging.length > 0, 'a value read was under way');
    const until = Date.now() + 5_000;
    while (hanging.some((h) => !h.closed) && Date.now() < until) await new Promise((ok) => setTimeout(ok, 50));
    assert.deepEqual(hanging.map((h) => h.closed), hanging.map(() => true), 'every stalled request was aborted');
  } finally {
    await stalling.close();
  }
});

test('a pickle shard set opens by the URL of its pytorch_model.bin.index.json and is checked against it', async () => {
  // One torch.save zip as the first of two shards (its index names one tensor it lacks), and a
  // legacy torch file as the second.
  const dir = path.join(tmp.dir, 'pt');
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(fixture('pickle', 'torch-zip.pt'), path.join(dir, 'pytorch_model-00001-of-00002.bin'));
  const names = Object.keys(JSON.parse(fs.readFileSync(fixture('pickle', 'expected.json'), 'utf8'))['torch-zip.pt']);
  const weightMap = Object.fromEntries(names.map((n) => [n, 'pytorch_model-00001-of-00002.bin']));
  fs.copyFileSync(fixture('pickle', 'legacy.pt'), path.join(dir, 'pytorch_model-00002-of-00002.bin'));
  const legacy = Object.keys(JSON.parse(fs.readFileSync(fixture('pickle', 'expected.json'), 'utf8'))['legacy.pt']);
  for (const n of legacy) weightMap[n] = 'pytorch_model-00002-of-00002.bin';
  weightMap['lm_head.weight'] = 'pytorch_model-00001-of-00002.bin';
  fs.writeFileSync(path.join(dir, 'pytorch_model.bin.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  const { page } = browser;
  const v = new Viewer(page, app.url);
  await v.open(`?url=${encodeURIComponent(files.url + 'pt/pytorch_model.bin.index.json')}`);
  assert.equal(await v.text('summary-format'), 'pickle');
  await v.tab('findings');
  const rows = await page.locator('[data-testid=finding]').allTextContents();
  const missing = rows.filter((r) => r.includes('set.missing_tensor'));
  assert.equal(missing.length, 1, rows.join('\n'));
  assert.match(missing[0], /lm_head\.weight/);
  assert.ok(!rows.some((r) => r.includes('set.missing_shard') || r.includes('set.unindexed_tensor')), rows.join('\n'));
  await v.tab('tensors');
  const n = names.length + legacy.length;
  assert.equal(await page.locator('[data-testid=table-count]').textContent(), `${n} of ${n} tensors`);
});
