// Tensorscope's engine as an ES module for other web apps: the same wasm the viewer runs, no
// viewer. Every function takes a File, a list of Files (a FileList too), a URL or a list of
// URLs (a sharded set: its index brings in the shards), reads only what it needs, and resolves
// to the JSON contract of the `tensorscope` command of the same name.
//
//   import { inspect, histogram } from './tensorscope.mjs';
//   const report = await inspect('https://example.org/model.gguf');
//   const h = await histogram(fileInput.files, 'blk.0.ffn_up.weight', { sample: 4 << 20 });
import init, * as wasm from './tensorscope-web.js';

let ready;
function load() {
  // The flags `main` reads: mount no viewer, and find worker.js beside this module.
  globalThis.__tensorscopeApiOnly = true;
  globalThis.__tensorscopeBase = new URL('.', import.meta.url).href;
  ready ??= init({ module_or_path: new URL('tensorscope-web_bg.wasm', import.meta.url) });
  return ready;
}

/** `tensorscope inspect --json`: tensors, metadata, summary, memory estimate, findings. */
export async function inspect(input) {
  await load();
  return wasm.inspect(input);
}

/** `tensorscope check --json`: findings; `{ sha256: true }` hashes every file, `{ scan: true }`
 *  counts NaN and infinite values in every tensor. */
export async function check(input, options = {}) {
  await load();
  return wasm.check(input, options);
}

/** `tensorscope hist --json` of one tensor: the whole tensor, `{ sample: bytes }` spread over
 *  it, or `{ elements: [a, b] }`; `{ bins }` (64 by default). */
export async function histogram(input, tensor, options = {}) {
  await load();
  return wasm.histogram(input, tensor, options);
}

/** `tensorscope repo --json`: every checkpoint of a Hub repository (`hf://OWNER/NAME[@REV]` or its
 *  web address; `{ endpoint }` for another Hub-compatible server) or of a folder's files, side by
 *  side: each variant's size, bits per weight, memory to run and findings, the companions. */
export async function repo(source, options = {}) {
  await load();
  return wasm.repo(source, options);
}

/** `tensorscope diff --json` of `a` against `b`; `{ values: 'none' | 'sample' | 'all' }`. */
export async function diff(a, b, options = {}) {
  await load();
  return wasm.diff(a, b, options);
}
