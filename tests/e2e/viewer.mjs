// Page object for the viewer, plus fixture builders shared by the specs.
import fs from 'node:fs';
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
