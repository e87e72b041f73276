// Page object for the viewer, plus fixture builders shared by the specs.
import fs from 'node:fs';
import zlib from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import { before, after } from 'node:test';
import { REPO, serveDist, launch } from './helpers.mjs';

export const FIXTURES = path.join(REPO, 'tests', 'fixtures');
export const fixture = (...p) => path.join(FIXTURES, ...p);

/** A fresh temp dir, removed by the returned cleanup. */
export function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tensorscope-spec-'));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A safetensors file: `tensors` is [{name, dtype, shape, bytes}] and `metadata` an object. */
export function safetensors(tensors, metadata, { pad = 0 } = {}) {
  const header = {};
  if (metadata) header.__metadata__ = metadata;
  let off = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.bytes.length] };
    off += t.bytes.length;
  }
  let json = JSON.stringify(header);
  const target = Math.max(pad, Math.ceil(Buffer.byteLength(json) / 8) * 8);
  json = json + ' '.repeat(target - Buffer.byteLength(json));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json), ...tensors.map((t) => t.bytes)]);
}

/**
 * A safetensors file of `n` tiny F32 tensors named like a large MoE's experts (500k of them make
 * a 57 MB header: the benchmarks' many-tensor header). Returns the header's JSON length.
 */
export function manyTensors(file, n) {
  const parts = ['{"__metadata__":{"format":"pt"}'];
  for (let i = 0; i < n; i++) {
    parts.push(
      `,"model.layers.${Math.floor(i / 5000)}.mlp.experts.${i % 5000}.down_proj.weight":` +
        `{"dtype":"F32","shape":[1,1],"data_offsets":[${i * 4},${i * 4 + 4}]}`,
    );
  }
  let json = parts.join('') + '}';
  json += ' '.repeat(Math.ceil(json.length / 8) * 8 - json.length);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json)]));
  fs.truncateSync(file, 8 + json.length + n * 4);
  return json.length;
}

/**
 * Record the page's main-thread tasks over 50 ms (PerformanceObserver, from every page load
 * on): `reset()` forgets those seen so far, `durations()` returns those since, in ms.
 */
export async function watchLongTasks(page) {
  await page.addInitScript(() => {
    window.__longtasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longtasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  return {
    reset: () => page.evaluate(() => { window.__longtasks = []; }),
    durations: () => page.evaluate(() => window.__longtasks),
  };
}

// Milliseconds from a click on "run-hist" to a whole-tensor result on screen, timed in the page
// (a MutationObserver fires as the text changes), so the harness's round trips stay out of it.
// The last run's result goes first: only a result shown after it counts.
export function timeWholeHistogram(page) {
  return page.evaluate(
    () =>
      new Promise((resolve) => {
        const what = () => document.querySelector('[data-testid=hist-what]')?.textContent ?? '';
        let [t0, cleared] = [0, false];
        const seen = new MutationObserver(() => {
          const shown = /whole tensor/.test(what());
          cleared ||= t0 > 0 && !shown;
          if (cleared && shown) {
            seen.disconnect();
            resolve(performance.now() - t0);
          }
        });
        seen.observe(document.body, { subtree: true, childList: true, characterData: true });
        t0 = performance.now();
        document.querySelector('[data-testid=run-hist]').click();
      }),
  );
}

/** Write llama.cpp's own test model of `name` (tests/fixtures/llama_archs, e.g.
 *  `gpt2-dense.gguf`) to `file`: its header as llama.cpp wrote it, then zeros for its data. */
export function llamaArch(name, file) {
  const expected = JSON.parse(fs.readFileSync(fixture('llama_archs', 'expected.json'), 'utf8'));
  const m = expected.models[name];
  const heads = zlib.gunzipSync(fs.readFileSync(fixture('llama_archs', 'heads.bin.gz')));
  const [start, len] = m.head;
  fs.writeFileSync(file, heads.subarray(start, start + len));
  fs.truncateSync(file, m.size);
  return file;
}

export const SIZE = 3 * 1024 ** 3;
const HEADER = 256;

/** A safetensors file of SIZE bytes, sparse: a 256-byte header, then zeros. */
export function makeBig(file, size = SIZE) {
  const data = size - 8 - HEADER;
  const header = {
    __metadata__: { note: 'sparse 3 GiB test file' },
    first: { dtype: 'F32', shape: [1024], data_offsets: [0, 4096] },
    tail: { dtype: 'F32', shape: [(data - 4096) / 4], data_offsets: [4096, data] },
  };
  let json = JSON.stringify(header);
  json += ' '.repeat(HEADER - json.length);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(HEADER));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json)]));
  fs.truncateSync(file, size);
  return { tailElems: (data - 4096) / 4 };
}

// One spec file's viewer server and browser (and, with `temp`, a temporary directory):
// started before its tests, closed after them. The fields are set once `before` has run.
export function session({ temp = false } = {}) {
  const s = { srv: null, browser: null, tmp: null };
  before(async () => {
    s.srv = await serveDist();
    s.browser = await launch();
    if (temp) s.tmp = tempDir();
  });
  after(async () => {
    await s.browser?.close();
    await s.srv?.close();
    s.tmp?.cleanup();
  });
  return s;
}

export class Viewer {
  constructor(page, url) {
    this.page = page;
    this.url = url;
  }
  /** Open the viewer on the small fixture sample most specs are written against, or with
   *  `{ sample: null }` on the page's own default sample. */
  async open(hash = '', { sample = 'gguf_v3_le.gguf' } = {}) {
    // `hash` may be a `#fragment` or a `?query` (which then opens its URLs, not a sample).
    const query = hash.startsWith('?') || !sample ? '' : `?sample=${sample}`;
    await this.page.goto(this.url + query + hash);
    await this.page.locator('[data-testid=app]').waitFor({ timeout: 15_000 });
    await this.waitLoaded();
  }
  /** Wait until a checkpoint is shown and no load is running. */
  async waitLoaded(source) {
    await this.page.locator('[data-testid=source]').waitFor({ timeout: 15_000 });
    if (source) {
      await this.page.waitForFunction(
        (s) => document.querySelector('[data-testid=source]')?.textContent === s,
        source,
        { timeout: 15_000 },
      );
    }
    await this.page.locator('[data-testid=loading]').waitFor({ state: 'detached', timeout: 30_000 });
  }
  async pick(files, testid = 'file-input') {
    await this.page.locator(`[data-testid=${testid}]`).setInputFiles(files);
  }
  async tab(id) {
    await this.page.locator(`[data-testid=tab-${id}]`).click();
  }
  rows() {
    return this.page.locator('[data-testid=tensor-row]');
  }
  async rowNames() {
    return this.page.locator('[data-testid=tensor-row]').evaluateAll((els) => els.map((e) => e.dataset.name));
  }
  async search(q) {
    await this.page.locator('[data-testid=table-search]').fill(q);
  }
  async selectTensor(name) {
    await this.tab('tensors');
    await this.search(name);
    await this.page.locator(`[data-testid=tensor-row][data-name="${name}"]`).click();
    await this.page.locator('[data-testid=detail-name]').filter({ hasText: name }).waitFor();
  }
  async waitHistogram() {
    await this.page.locator('[data-testid=histogram]').waitFor({ timeout: 60_000 });
  }
  text(testid) {
    return this.page.locator(`[data-testid=${testid}]`).first().textContent();
  }
}

/** Start a sampling CPU profile of `page` over CDP; give its session to [`printProfile`]. */
export async function startProfile(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return cdp;
}

/** Stop the profile and print the functions with the most self time, then the engine's and the
 *  UI's functions by inclusive time (build with WASM_OPT=0 to keep the wasm's names). */
export async function printProfile(cdp) {
  const { profile: p } = await cdp.send('Profiler.stop');
  const self = new Map();
  const dt = p.timeDeltas;
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const hits = new Map();
  p.samples.forEach((id, i) => hits.set(id, (hits.get(id) ?? 0) + (dt[i] ?? 0)));
  for (const [id, us] of hits) {
    const f = byId.get(id).callFrame;
    const name = f.functionName || `(${f.url.split('/').pop()}:${f.lineNumber})`;
    self.set(name, (self.get(name) ?? 0) + us);
  }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 30);
  for (const [name, us] of top) console.log(`${(us / 1000).toFixed(0).padStart(7)} ms  ${name.slice(0, 140)}`);
  // Inclusive time of each function (once per sample, however deep it recurs).
  const parent = new Map();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const total = new Map();
  for (const [id, us] of hits) {
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at).callFrame;
      const name = f.functionName || '(anonymous)';
      if (!seen.has(name)) total.set(name, (total.get(name) ?? 0) + us);
      seen.add(name);
    }
  }
  console.log('-- inclusive');
  const incl = [...total].filter(([n]) => /tensorscope|leptos|reactive|tachys/.test(n)).sort((a, b) => b[1] - a[1]).slice(0, 40);
  for (const [name, us] of incl) console.log(`${(us / 1000).toFixed(0).padStart(7)} ms  ${name.slice(0, 140)}`);
}

/** Write a set of `shards` safetensors shards of `perShard` tiny F32 tensors each into `dir`,
 *  with their `model.safetensors.index.json` and a `config.json`; returns the bytes of all the
 *  headers (length prefix included) and of the index. */
export function shardSet(dir, shards, perShard) {
  const weightMap = {};
  let headerBytes = 0;
  for (let i = 0; i < shards; i++) {
    const name = `model-${String(i + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const tensors = Array.from({ length: perShard }, (_, j) => ({
      name: `model.layers.${i}.mlp.experts.${j}.down_proj.weight`,
      dtype: 'F32',
      shape: [2],
      bytes: Buffer.alloc(8),
    }));
    const bytes = safetensors(tensors, { format: 'pt' });
    headerBytes += 8 + Number(bytes.readBigUInt64LE(0));
    fs.writeFileSync(path.join(dir, name), bytes);
    for (const t of tensors) weightMap[t.name] = name;
  }
  const index = JSON.stringify({ metadata: { total_size: shards * perShard * 8 }, weight_map: weightMap });
  fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), index);
  // The config beside the index is fetched too (one more request, a few hundred bytes).
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'qwen3_moe', num_hidden_layers: shards }));
  return { headerBytes, indexBytes: Buffer.byteLength(index) };
}

/** A test server's request log as the server saw it: from the first arrival to the last
 *  response (`span_ms`), the time with nothing in flight (`idle_ms`), and the requests in
 *  flight on average over the span. */
export function serverView(requests) {
  const byTime = [...requests].sort((a, b) => a.at - b.at);
  const span = Math.max(...byTime.map((r) => r.sent)) - byTime[0].at;
  let idle = 0;
  let busyUntil = byTime[0].at;
  for (const r of byTime) {
    if (r.at > busyUntil) idle += r.at - busyUntil;
    busyUntil = Math.max(busyUntil, r.sent);
  }
  const held = byTime.reduce((s, r) => s + (r.sent - r.at), 0);
  return { span_ms: span, idle_ms: idle, in_flight: Number((held / span).toFixed(2)) };
}
