// The JS API (www/tensorscope.mjs) on a page that is not the viewer: inspect, check,
// histogram and diff of Files and URLs give the CLI's JSON, and no viewer is mounted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fixture, session } from './viewer.mjs';

const s = session();
const REPO = path.resolve(import.meta.dirname, '..', '..');

function cli(...args) {
  const bin = ['release', 'debug']
    .map((p) => path.join(REPO, 'target', p, 'tensorscope'))
    .filter((p) => fs.existsSync(p))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  assert.ok(bin, 'the CLI is built (cargo build)');
  return JSON.parse(spawnSync(bin, args, { encoding: 'utf8' }).stdout);
}

test('inspect, check, histogram and diff from another page give the JSON contract', async () => {
  const { page } = s.browser;
  await page.goto(s.srv.url + 'favicon.svg');
  const file = fixture('gguf_v3_le.gguf');
  const bytes = [...fs.readFileSync(file)];
  const r = await page.evaluate(async (bytes) => {
    const api = await import('/tensorscope.mjs');
    const f = new File([new Uint8Array(bytes)], 'gguf_v3_le.gguf');
    const url = new URL('/samples/gguf_v3_le.gguf', location.href).href;
    const out = {
      inspect: await api.inspect(f),
      byUrl: await api.inspect(url),
      hist: await api.histogram([f], 'blk.0.attn_q.weight', { bins: 16 }),
      sample: await api.histogram(url, 'token_embd.weight', { sample: 4096 }),
      check: await api.check(f, { sha256: true, scan: true }),
      diff: await api.diff(f, url, { values: 'all' }),
      mounted: document.querySelector('[data-testid=app]') !== null,
    };
    for (const [what, call] of [
      ['empty', () => api.inspect([])],
      ['missing tensor', () => api.histogram(f, 'no.such.tensor')],
      ['name not a string', () => api.histogram(f, 42)],
      ['bad sample', () => api.histogram(f, 'blk.0.attn_q.weight', { sample: 0 })],
      ['sample as text', () => api.histogram(f, 'blk.0.attn_q.weight', { sample: '4096' })],
      ['bad elements', () => api.histogram(f, 'blk.0.attn_q.weight', { elements: '0:100' })],
      ['bad values', () => api.diff(f, f, { values: 'some' })],
    ]) {
      try {
        await call();
        out[what] = 'resolved';
      } catch (e) {
        out[what] = String(e.message ?? e);
      }
    }
    return out;
  }, bytes);
  assert.equal(r.mounted, false, 'the API mounts no viewer');
  const want = cli('inspect', file, '--json');
  want.files[0].path = 'gguf_v3_le.gguf';
  assert.deepEqual(r.inspect, want, 'inspect equals the CLI, paths aside');
  assert.deepEqual(r.byUrl.tensors, want.tensors, 'a URL gives the same tensors');
  assert.deepEqual(r.hist, cli('hist', file, '--tensor', 'blk.0.attn_q.weight', '--bins', '16', '--json'));
  assert.equal(r.sample.tensor, 'token_embd.weight');
  assert.ok(r.sample.count > 0 && r.sample.count <= r.sample.elements);
  const sha = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  assert.equal(r.check.files[0].sha256, sha);
  const checked = cli('check', file, '--sha256', '--scan', '--json');
  checked.files[0].path = 'gguf_v3_le.gguf';
  assert.deepEqual(r.check, checked, 'check equals the CLI, paths aside');
  assert.deepEqual(r.diff.summary, { same: want.tensors.length, changed: 0, only_a: 0, only_b: 0 });
  assert.match(r.empty, /nothing to open/);
  assert.match(r['missing tensor'], /no tensor named 'no.such.tensor'/);
  // Arguments the API cannot use are errors, never a crash or a silent read of the whole tensor.
  assert.match(r['name not a string'], /name must be a string/);
  assert.match(r['bad sample'], /sample takes a number of bytes/);
  assert.match(r['sample as text'], /sample takes a number of bytes/);
  assert.match(r['bad elements'], /elements takes \[a, b\]/);
  assert.match(r['bad values'], /values takes none, sample or all/);
  const missing = s.srv.requests.filter((q) => q.status === 404).map((q) => q.path);
  assert.deepEqual(missing, ['/favicon.ico'], 'only the browser\'s own favicon request of the SVG page is missing');
  s.browser.errors.splice(0, s.browser.errors.length, ...s.browser.errors.filter((e) => !/status of 404/.test(e)));
  assert.deepEqual(s.browser.errors, []);
});

test('the package is ready to publish: its files exist and its types name every export', async () => {
  const dist = path.join(REPO, 'dist');
  const pkg = JSON.parse(fs.readFileSync(path.join(dist, 'package.json'), 'utf8'));
  for (const f of pkg.files) assert.ok(fs.existsSync(path.join(dist, f)), f);
  // Everything the module and its workers load ships with it: each script's imports, and each
  // wasm-bindgen glue's wasm.
  for (const f of pkg.files.filter((x) => /\.(m?js)$/.test(x))) {
    const text = fs.readFileSync(path.join(dist, f), 'utf8');
    for (const [, dep] of text.matchAll(/from\s*['"]\.\/([\w.-]+)['"]/g)) assert.ok(pkg.files.includes(dep), `${f} imports ${dep}`);
  }
  for (const glue of pkg.files.filter((x) => x.startsWith('tensorscope-') && x.endsWith('.js'))) {
    const wasm = glue.replace(/\.js$/, '_bg.wasm');
    assert.ok(pkg.files.includes(wasm), `${glue} loads ${wasm}`);
  }
  const types = fs.readFileSync(path.join(dist, pkg.types), 'utf8');
  const mod = fs.readFileSync(path.join(dist, pkg.main), 'utf8');
  for (const name of [...mod.matchAll(/export async function (\w+)/g)].map((m) => m[1])) {
    assert.match(types, new RegExp(`export function ${name}\\(`), name);
  }
});
