// A remote set of 500 shards behind an index, on a server that answers every request after
// 50 ms: shard headers are read six at a time, each in one request (the first shard tells the
// size of the others' headers), and only header bytes (plus a bounded over-read) are fetched.
// The time is printed, not asserted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './server.mjs';
import { Viewer, safetensors, session, tempDir } from './viewer.mjs';

const s = session();
const tmp = tempDir();
const SHARDS = 500;
const PER_SHARD = 40;
let files;
let headerBytes = 0;
let indexBytes = 0;

before(async () => {
  const weightMap = {};
  for (let i = 0; i < SHARDS; i++) {
    const name = `model-${String(i + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
    const tensors = Array.from({ length: PER_SHARD }, (_, j) => ({
      name: `model.layers.${i}.mlp.experts.${j}.down_proj.weight`,
      dtype: 'F32',
      shape: [2],
      bytes: Buffer.alloc(8),
    }));
    const bytes = safetensors(tensors, { format: 'pt' });
    headerBytes += 8 + Number(bytes.readBigUInt64LE(0));
    fs.writeFileSync(path.join(tmp.dir, name), bytes);
    for (const t of tensors) weightMap[t.name] = name;
  }
  const index = JSON.stringify({ metadata: { total_size: SHARDS * PER_SHARD * 8 }, weight_map: weightMap });
  indexBytes = Buffer.byteLength(index);
  fs.writeFileSync(path.join(tmp.dir, 'model.safetensors.index.json'), index);
  // The config beside the index is fetched too (one more request, a few hundred bytes).
  fs.writeFileSync(path.join(tmp.dir, 'config.json'), JSON.stringify({ model_type: 'qwen3_moe', num_hidden_layers: SHARDS }));
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
  assert.match(await v.text('estimate-about'), new RegExp(`qwen3_moe · from config\\.json · ${SHARDS} layers`));
  assert.ok(files.load.max <= 6 && files.load.max >= 5, `six requests in flight at most, and used: ${files.load.max}`);
  const bytes = Number(await page.locator('[data-testid=transferred]').getAttribute('data-bytes'));
  assert.ok(bytes >= headerBytes + indexBytes, `${bytes} transferred, headers and index ${headerBytes + indexBytes}`);
  assert.ok(bytes <= 1.35 * headerBytes + indexBytes + 4096, `over-read bounded: ${bytes} for ${headerBytes} of headers`);
  const requests = files.requests.length;
  // On the server's clock: from the index's arrival to the last response, and the idle gaps
  // (no request in flight) between them, which are the page's own time.
  const byTime = [...files.requests].sort((a, b) => a.at - b.at);
  const span = Math.max(...byTime.map((r) => r.sent)) - byTime[0].at;
  let idle = 0;
  let busyUntil = byTime[0].at;
  for (const r of byTime) {
    if (r.at > busyUntil) idle += r.at - busyUntil;
    busyUntil = Math.max(busyUntil, r.sent);
  }
  const held = byTime.reduce((s, r) => s + (r.sent - r.at), 0);
  console.log(
    `# on the server: ${span} ms from the index to the last response, ${idle} ms with nothing in flight, ` +
      `${(held / span).toFixed(1)} requests in flight on average`,
  );
  console.log(
    `# ${SHARDS} shards + index over 50 ms/response: ${ms} ms (${(ms / 50).toFixed(0)} round trips of 50 ms; ` +
      `ideal ${Math.ceil(SHARDS / 6)}), ${requests} requests, ${bytes} B transferred (headers ${headerBytes} B + index ${indexBytes} B)`,
  );
  assert.deepEqual(s.browser.errors, []);
});
