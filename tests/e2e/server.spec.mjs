// server.mjs honours HTTP Range (206 / 416), and --no-range ignores it (200).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startServer, parseRange } from './server.mjs';
import { E2E_DIR } from './helpers.mjs';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tensorscope-srv-'));
const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) & 0xff));
fs.writeFileSync(path.join(root, 'data.bin'), bytes);
fs.writeFileSync(path.join(root, 'empty.bin'), Buffer.alloc(0));
fs.writeFileSync(path.join(root, 'm.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const body = async (res) => Buffer.from(await res.arrayBuffer());

describe('with Range', () => {
  let srv;
  before(async () => (srv = await startServer({ root, port: 0 })));
  after(() => srv.close());

  test('bytes=a-b -> 206 with exactly those bytes', async () => {
    const res = await fetch(srv.url + 'data.bin', { headers: { Range: 'bytes=100-199' } });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), 'bytes 100-199/1000');
    assert.equal(res.headers.get('content-length'), '100');
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.deepEqual(await body(res), bytes.subarray(100, 200));
  });

  test('open-ended, suffix and over-long ranges', async () => {
    let res = await fetch(srv.url + 'data.bin', { headers: { Range: 'bytes=990-' } });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), 'bytes 990-999/1000');
    assert.deepEqual(await body(res), bytes.subarray(990));

    res = await fetch(srv.url + 'data.bin', { headers: { Range: 'bytes=-8' } });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), 'bytes 992-999/1000');
    assert.deepEqual(await body(res), bytes.subarray(992));

    res = await fetch(srv.url + 'data.bin', { headers: { Range: 'bytes=995-5000' } });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), 'bytes 995-999/1000');
    assert.deepEqual(await body(res), bytes.subarray(995));
  });

  test('unsatisfiable -> 416 with Content-Range: bytes */size', async () => {
    for (const [file, range, size] of [['data.bin', 'bytes=1000-', 1000], ['data.bin', 'bytes=5000-6000', 1000], ['empty.bin', 'bytes=0-', 0], ['data.bin', 'bytes=-0', 1000]]) {
      const res = await fetch(srv.url + file, { headers: { Range: range } });
      assert.equal(res.status, 416, `${file} ${range}`);
      assert.equal(res.headers.get('content-range'), `bytes */${size}`);
      await res.arrayBuffer();
    }
  });

  test('no Range, malformed or multi-range -> 200 with the whole file', async () => {
    for (const headers of [{}, { Range: 'items=0-1' }, { Range: 'bytes=5-2' }, { Range: 'bytes=0-1,5-6' }]) {
      const res = await fetch(srv.url + 'data.bin', { headers });
      assert.equal(res.status, 200, JSON.stringify(headers));
      assert.deepEqual(await body(res), bytes);
    }
  });

  test('HEAD, content types, 404 and path traversal', async () => {
    let res = await fetch(srv.url + 'data.bin', { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), '1000');
    res = await fetch(srv.url + 'm.wasm');
    assert.equal(res.headers.get('content-type'), 'application/wasm');
    await res.arrayBuffer();
    res = await fetch(srv.url + 'missing.bin');
    assert.equal(res.status, 404);
    await res.arrayBuffer();
    res = await fetch(srv.url + '..%2f..%2f..%2fetc%2fpasswd');
    assert.notEqual(res.status, 200);
    await res.arrayBuffer();
  });

  test('request log records ranges and statuses', () => {
    const ranged = srv.requests.filter((r) => r.path === '/data.bin' && r.range === 'bytes=100-199');
    assert.equal(ranged.length, 1);
    assert.equal(ranged[0].status, 206);
  });
});

describe('with --no-range', () => {
  let srv;
  before(async () => (srv = await startServer({ root, port: 0, range: false })));
  after(() => srv.close());

  test('Range is ignored: 200 and the whole file', async () => {
    const res = await fetch(srv.url + 'data.bin', { headers: { Range: 'bytes=100-199' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-range'), null);
    assert.equal(res.headers.get('accept-ranges'), 'none');
    assert.deepEqual(await body(res), bytes);
  });
});

describe('with --cors', () => {
  let srv;
  before(async () => (srv = await startServer({ root, port: 0, cors: true })));
  after(() => srv.close());

  test('adds CORS headers and answers preflight', async () => {
    let res = await fetch(srv.url + 'data.bin', { headers: { Range: 'bytes=0-0' } });
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('access-control-expose-headers'), /Content-Range/);
    await res.arrayBuffer();
    res = await fetch(srv.url + 'data.bin', { method: 'OPTIONS' });
    assert.equal(res.status, 204);
    assert.match(res.headers.get('access-control-allow-headers'), /Range/);
  });
});

test('parseRange edge cases', () => {
  assert.equal(parseRange(undefined, 10), null);
  assert.deepEqual(parseRange('bytes=0-0', 10), { start: 0, end: 0 });
  assert.deepEqual(parseRange('bytes=-100', 10), { start: 0, end: 9 });
  assert.deepEqual(parseRange('bytes=3000000000-3000000009', 4e9), { start: 3e9, end: 3e9 + 9 });
  assert.equal(parseRange('bytes=10-', 10), 'unsatisfiable');
  assert.equal(parseRange('bytes=-', 10), null);
});

test('CLI: node server.mjs --root DIR --port P --no-range serves and ignores Range', async () => {
  const port = await new Promise((resolve) => {
    // find a free port, then hand it to the CLI
    import('node:net').then(({ createServer }) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = s.address().port;
        s.close(() => resolve(p));
      });
    });
  });
  const child = spawn(process.execPath, [path.join(E2E_DIR, 'server.mjs'), '--root', root, '--port', String(port), '--no-range', '--quiet'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise((resolve, reject) => {
      child.stdout.on('data', (d) => d.toString().includes('Serving') && resolve());
      child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/data.bin`, { headers: { Range: 'bytes=0-9' } });
    assert.equal(res.status, 200);
    assert.equal((await body(res)).length, 1000);
  } finally {
    child.kill('SIGTERM');
  }
});
