// Benchmark (prints numbers, asserts nothing), in one run:
//  1. SHA-256 MB/s of the viewer's check (wasm, in headless Chromium, file read through
//     File.slice) next to the native `sha256sum` on the same file;
//  2. the bytes transferred to open a remote sharded safetensors set over HTTP Range, next to
//     the size of the set and of its headers.
// Usage: bash scripts/build-web.sh && node tests/e2e/bench-check.mjs [MiB to hash, default 512]
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { serveDist, launch } from './helpers.mjs';
import { startServer } from './server.mjs';
import { Viewer, tempDir } from './viewer.mjs';

const MIB = 1 << 20;
const hashMiB = Number(process.argv[2] ?? 512);
const tmp = tempDir();

/** A safetensors header for `tensors` [{name, dtype, shape, nbytes}]; returns {buf, dataBytes}. */
function header(tensors) {
  const h = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const t of tensors) {
    h[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.nbytes] };
    off += t.nbytes;
  }
  let json = JSON.stringify(h);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return { buf: Buffer.concat([len, Buffer.from(json)]), dataBytes: off };
}

const fmt = (bytes, ms) => `${((bytes / 1e6) / (ms / 1000)).toFixed(0)} MB/s`;

try {
  // 1. Hashing: a safetensors file of random data.
  const file = path.join(tmp.dir, 'hash.safetensors');
  const n = hashMiB * MIB;
  const { buf } = header([{ name: 'w', dtype: 'U8', shape: [n], nbytes: n }]);
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, buf);
  for (let i = 0; i < hashMiB; i += 64) fs.writeSync(fd, crypto.randomBytes(Math.min(64, hashMiB - i) * MIB));
  fs.closeSync(fd);
  const size = fs.statSync(file).size;
  execFileSync('sha256sum', [file]); // warm the page cache
  let t0 = performance.now();
  const nativeHex = execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0];
  const nativeMs = performance.now() - t0;

  const app = await serveDist();
  const browser = await launch();
  const { page } = browser;
  const v = new Viewer(page, app.url);
  await v.open();
  await v.pick(file);
  await v.waitLoaded('hash.safetensors');
  await v.tab('check');
  await page.locator('[data-testid=check-run]').click();
  await page.locator('[data-testid=check-done]').waitFor({ timeout: 600_000 });
  const wasmMs = Number(await page.locator('[data-testid=check-done]').getAttribute('data-ms'));
  const wasmHex = await v.text('check-sha');

  // 2. A remote sharded set: 8 sparse shards of 512 MiB, 64 tensors each, and the index.
  const setDir = path.join(tmp.dir, 'set');
  fs.mkdirSync(setDir);
  const shards = 8;
  const weightMap = {};
  let setBytes = 0;
  let headerBytes = 0;
  for (let s = 1; s <= shards; s++) {
    const name = `model-${String(s).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const tensors = Array.from({ length: 64 }, (_, i) => ({
      name: `model.layers.${(s - 1) * 8 + (i >> 3)}.mlp.w${i & 7}.weight`,
      dtype: 'BF16',
      shape: [1024, 4096],
      nbytes: 1024 * 4096 * 2,
    }));
    const { buf: h, dataBytes } = header(tensors);
    const p = path.join(setDir, name);
    fs.writeFileSync(p, h);
    fs.truncateSync(p, h.length + dataBytes);
    for (const t of tensors) weightMap[t.name] = name;
    setBytes += h.length + dataBytes;
    headerBytes += h.length;
  }
  const index = JSON.stringify({ metadata: { total_size: setBytes - headerBytes }, weight_map: weightMap }, null, 2);
  fs.writeFileSync(path.join(setDir, 'model.safetensors.index.json'), index);
  const files = await startServer({ root: setDir, port: 0, cors: true });
  t0 = performance.now();
  await v.open(`?url=${encodeURIComponent(files.url + 'model.safetensors.index.json')}`);
  const openMs = performance.now() - t0;
  const tr = page.locator('[data-testid=transferred]');
  const sent = Number(await tr.getAttribute('data-bytes'));
  const requests = Number(await tr.getAttribute('data-requests'));
  await browser.close();
  await app.close();
  await files.close();

  console.log(`SHA-256 of a ${(size / 1e6).toFixed(0)} MB file (digests ${wasmHex === nativeHex ? 'equal' : 'DIFFER'}):`);
  console.log(`  wasm (viewer check, Chromium)  ${fmt(size, wasmMs).padStart(10)}  ${(wasmMs / 1000).toFixed(2)} s`);
  console.log(`  native sha256sum               ${fmt(size, nativeMs).padStart(10)}  ${(nativeMs / 1000).toFixed(2)} s`);
  console.log(`  wasm / native                  ${(nativeMs / wasmMs).toFixed(2)}`);
  console.log(`Opening a remote set of ${shards} shards + index (${(setBytes / 1e9).toFixed(2)} GB) over HTTP Range:`);
  console.log(`  transferred ${sent} B in ${requests} requests, ${(openMs / 1000).toFixed(2)} s (page load included)`);
  console.log(`  headers ${headerBytes} B + index ${index.length} B = ${headerBytes + index.length} B`);
} finally {
  tmp.cleanup();
}
