// Checkpoints past 4 GiB, where wasm32's 32-bit usize bites: a 6 GiB GGUF and a 4.5 GiB
// safetensors file (sparse), each holding a small tensor of known values stored past 4 GiB.
// SHA-256 in the browser equals sha256sum, and the tensor decodes exactly, from a local file
// and over HTTP Range from another origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startServer } from './server.mjs';
import { Viewer, session, tempDir } from './viewer.mjs';
import { notFoundSorted, COMPANIONS } from './helpers.mjs';

const s = session();
const tmp = tempDir();
after(() => tmp.cleanup());
const GIB = 1024 ** 3;
const KNOWN = Float32Array.from({ length: 16 }, (_, i) => i * 0.75 - 5.5);
let files; // the temp dir over HTTP, on another origin than the viewer
const made = {};

/** `pad` bytes of zeros (never written: the file is sparse), then the 16 known values. */
function writeSparse(file, header, padBytes) {
  const known = Buffer.from(KNOWN.buffer);
  fs.writeFileSync(file, header);
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, known, 0, known.length, header.length + padBytes);
  fs.closeSync(fd);
  return header.length + padBytes;
}

function gguf(file, size) {
  const str = (s) => {
    const b = Buffer.from(s);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(b.length));
    return Buffer.concat([len, b]);
  };
  const u32 = (v) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return b;
  };
  const u64 = (v) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  };
  const head = (pad) =>
    Buffer.concat([
      Buffer.from('GGUF'), u32(3), u64(2), u64(1),
      str('general.name'), u32(8), str('past 4 GiB'),
      str('pad'), u32(1), u64(pad), u32(24), u64(0), // I8, one byte per element
      str('known'), u32(1), u64(16), u32(0), u64(pad), // F32 at relative offset `pad`
    ]);
  const headerLen = Math.ceil(head(0).length / 32) * 32;
  const pad = Math.floor((size - headerLen - 64) / 32) * 32;
  const h = Buffer.alloc(headerLen);
  head(pad).copy(h);
  return { knownOffset: writeSparse(file, h, pad) };
}

function safetensors(file, size) {
  const header = (pad) =>
    JSON.stringify({
      __metadata__: { note: 'past 4 GiB' },
      pad: { dtype: 'U8', shape: [pad], data_offsets: [0, pad] },
      known: { dtype: 'F32', shape: [16], data_offsets: [pad, pad + 64] },
    });
  const n = Math.ceil((header(size).length + 8) / 8) * 8;
  const pad = size - 8 - n - 64;
  const json = header(pad).padEnd(n, ' ');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(n));
  return { knownOffset: writeSparse(file, Buffer.concat([len, Buffer.from(json)]), pad) };
}

before(async () => {
  for (const [name, make, size] of [
    ['big6.gguf', gguf, 6 * GIB],
    ['big45.safetensors', safetensors, 4.5 * GIB],
  ]) {
    const file = path.join(tmp.dir, name);
    const { knownOffset } = make(file, size);
    assert.ok(knownOffset > 4 * GIB, `${name}: the known values lie past 4 GiB (${knownOffset})`);
    assert.equal(fs.statSync(file).size, knownOffset + 64);
    const sha256 = execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(/\s+/)[0];
    made[name] = { file, sha256, knownOffset };
  }
  files = await startServer({ root: tmp.dir, port: 0, cors: true });
});
after(async () => {
  await files?.close();
});

/** The tensor `known` decodes to exactly KNOWN: statistics and the .npy bytes. */
async function knownDecodesExactly(v) {
  const page = v.page;
  await v.selectTensor('known');
  await v.waitHistogram();
  assert.equal(await v.text('stat-count'), '16');
  // The viewer shows 4 significant digits.
  assert.equal(await v.text('stat-min'), KNOWN[0].toFixed(3));
  assert.equal(await v.text('stat-max'), KNOWN[15].toFixed(3));
  const download = page.waitForEvent('download');
  await page.locator('[data-testid=download-npy]').click();
  const npy = fs.readFileSync(await (await download).path());
  assert.deepEqual(npy.subarray(npy.length - 64), Buffer.from(KNOWN.buffer), 'the .npy holds the known values');
}

/** Run the Check panel's SHA-256 and return the digest shown. */
async function browserSha256(v) {
  const page = v.page;
  await v.tab('check');
  await page.locator('[data-testid=check-run]').click();
  await page.locator('[data-testid=check-done]').waitFor({ timeout: 600_000 });
  return v.text('check-sha');
}

for (const name of ['big6.gguf', 'big45.safetensors']) {
  test(`${name} from a local file: SHA-256 equals sha256sum and the tensor past 4 GiB decodes exactly`, { timeout: 900_000 }, async () => {
    const v = new Viewer(s.browser.page, s.srv.url);
    await v.open();
    await v.pick(made[name].file);
    await v.waitLoaded(name);
    await v.tab('findings');
    assert.equal(await s.browser.page.locator('[data-testid=finding][data-severity=error]').count(), 0);
    await knownDecodesExactly(v);
    assert.equal(await browserSha256(v), made[name].sha256);
    assert.deepEqual(s.browser.errors, []);
  });
}

test('over HTTP Range from another origin: the tensors past 4 GiB decode exactly, the 6 GiB hash matches', { timeout: 900_000 }, async () => {
  for (const name of ['big45.safetensors', 'big6.gguf']) {
    const v = new Viewer(s.browser.page, s.srv.url);
    files.requests.length = 0;
    await v.open(`?url=${encodeURIComponent(files.url + name)}`);
    await knownDecodesExactly(v);
    const ranges = files.requests.map((r) => r.range).filter(Boolean);
    assert.ok(
      ranges.some((r) => Number(/bytes=(\d+)/.exec(r)[1]) >= made[name].knownOffset),
      'the values were read by a range past 4 GiB',
    );
    if (name === 'big6.gguf') assert.equal(await browserSha256(v), made[name].sha256);
  }
  // The safetensors file asked for the configs beside it, which its folder does not have; the
  // GGUF asked for none.
  assert.deepEqual(notFoundSorted(s.browser.errors), { missing: [...COMPANIONS].sort(), other: [] });
});
