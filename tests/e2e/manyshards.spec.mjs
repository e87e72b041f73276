// A remote set of 500 shards behind an index, on a server that answers every request after
// 50 ms: shard headers are read six at a time, each in one request (sized from the names the
// index gives the shard), and only header bytes (plus a bounded over-read) are fetched.
// The time is printed, not asserted. And a 60 MB index, read in a few large requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { notFound } from './helpers.mjs';
import { startServer } from './server.mjs';
import { Viewer, serverView, session, shardSet, tempDir } from './viewer.mjs';

const s = session();
const tmp = tempDir();
const SHARDS = 500;
const PER_SHARD = 40;
// The companions an index brings that these sets do not have, in the order asked.
const COMPANIONS_ABSENT = ['generation_config.json', 'tokenizer_config.json', 'chat_template.jinja'];
let files;
let headerBytes = 0;
let indexBytes = 0;

before(async () => {
  ({ headerBytes, indexBytes } = shardSet(tmp.dir, SHARDS, PER_SHARD));
  files = await startServer({ root: tmp.dir, port: 0, cors: true, delay: 50 });
});
after(async () => {
  await files?.close();
  tmp.cleanup();
});

test('500 remote shards open six at a time, one request each, fetching only their headers', { timeout: 300_000 }, async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  const t0 = Date.now();
  await v.open(`?url=${encodeURIComponent(files.url + 'model.safetensors.index.json')}`);
  await v.waitLoaded();
  const ms = Date.now() - t0;
  assert.equal(await v.text('summary-files'), String(SHARDS));
  assert.equal(await v.text('summary-tensors'), String(SHARDS * PER_SHARD));
  const shardRequests = files.requests.filter((r) => r.path.endsWith('.safetensors'));
  assert.equal(shardRequests.length, SHARDS, 'one request per shard header');
  assert.equal(files.requests.filter((r) => r.path.endsWith('/config.json')).length, 1);
  // The index in one request, and no preflight anywhere: every request carries only the
  // CORS-safelisted Range header.
  assert.equal(files.requests.filter((r) => r.path.endsWith('.index.json')).length, 1);
  assert.deepEqual(files.requests.filter((r) => r.method !== 'GET'), []);
  assert.match(await v.text('estimate-about'), new RegExp(`qwen3_moe · from config\\.json · ${SHARDS} layers`));
  assert.ok(files.load.max <= 6 && files.load.max >= 5, `six requests in flight at most, and used: ${files.load.max}`);
  // The index, the shards, and the config and the three other companions the index brings
  // (this set has none of them: answered 404).
  assert.equal(files.requests.length, SHARDS + 5);
  const bytes = Number(await page.locator('[data-testid=transferred]').getAttribute('data-bytes'));
  assert.ok(bytes >= headerBytes + indexBytes, `${bytes} transferred, headers and index ${headerBytes + indexBytes}`);
  assert.ok(bytes <= 1.35 * headerBytes + indexBytes + 4096, `over-read bounded: ${bytes} for ${headerBytes} of headers`);
  const requests = files.requests.length;
  // On the server's clock: from the index's arrival to the last response, and the idle gaps
  // (no request in flight) between them, which are the page's own time.
  const seen = serverView(files.requests);
  console.log(
    `# on the server: ${seen.span_ms} ms from the index to the last response, ${seen.idle_ms} ms with nothing in flight, ` +
      `${seen.in_flight.toFixed(1)} requests in flight on average`,
  );
  console.log(
    `# ${SHARDS} shards + index over 50 ms/response: ${ms} ms (${(ms / 50).toFixed(0)} round trips of 50 ms; ` +
      `ideal ${Math.ceil(SHARDS / 6)}), ${requests} requests, ${bytes} B transferred (headers ${headerBytes} B + index ${indexBytes} B)`,
  );
  assert.deepEqual(notFound(s.browser.errors), { missing: COMPANIONS_ABSENT, other: [] });
  s.browser.errors.length = 0;
});

test('a 60 MB remote index is read in 16 MiB requests, and its 180,000 tensors all open', { timeout: 300_000 }, async () => {
  const { page } = s.browser;
  const big = tempDir();
  try {
    // Four shards of 45,000 tensors with long names: a 60 MB index and 18 MB headers.
    const pad = 'x'.repeat(260);
    const weightMap = {};
    for (let i = 0; i < 4; i++) {
      const name = `model-0000${i + 1}-of-00004.safetensors`;
      const header = {};
      for (let j = 0; j < 45_000; j++) {
        const t = `model.layers.${i}.${pad}.experts.${j}.weight`;
        header[t] = { dtype: 'F32', shape: [1], data_offsets: [4 * j, 4 * j + 4] };
        weightMap[t] = name;
      }
      const json = Buffer.from(JSON.stringify(header));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      fs.writeFileSync(path.join(big.dir, name), Buffer.concat([len, json, Buffer.alloc(4 * 45_000)]));
    }
    const index = JSON.stringify({ metadata: { total_size: 4 * 45_000 * 4 }, weight_map: weightMap });
    fs.writeFileSync(path.join(big.dir, 'model.safetensors.index.json'), index);
    fs.writeFileSync(path.join(big.dir, 'config.json'), JSON.stringify({ model_type: 'llama', num_hidden_layers: 4 }));
    const size = Buffer.byteLength(index);
    assert.ok(size > 60e6, `${size} B`);
    const server = await startServer({ root: big.dir, port: 0, cors: true });
    try {
      const v = new Viewer(page, s.srv.url);
      await v.open(`?url=${encodeURIComponent(server.url + 'model.safetensors.index.json')}`);
      await page.locator('[data-testid=summary-tensors]').waitFor({ timeout: 120_000 });
      assert.equal(await v.text('summary-tensors'), '180000');
      assert.equal(await v.text('summary-files'), '4');
      const reads = server.requests.filter((r) => r.path.endsWith('.index.json'));
      // The first 8 MiB, then the rest 16 MiB at a time.
      assert.equal(reads.length, 1 + Math.ceil((size - (8 << 20)) / (16 << 20)), JSON.stringify(reads.map((r) => r.range)));
      assert.deepEqual(server.requests.filter((r) => r.method !== 'GET'), []);
      assert.equal(await page.locator('[data-testid=findings-badge]').textContent(), '0');
      assert.deepEqual(notFound(s.browser.errors), { missing: COMPANIONS_ABSENT, other: [] });
      s.browser.errors.length = 0;
    } finally {
      await server.close();
    }
  } finally {
    big.cleanup();
  }
});
