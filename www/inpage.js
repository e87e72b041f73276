// The workers' wasm on the page itself, for where Web Workers cannot start (src/io/workers.rs
// loads this only then): the page's pool hands each message to `serve_on_page`, which answers
// as a worker would. A wasm that fails to start is announced too (as null), not left pending.
import init, { serve_on_page } from './tensorscope-worker.js';

let serve = null;
try {
  await init();
  serve = serve_on_page;
} catch (e) {
  console.error('tensorscope: the workers\' wasm did not start on the page', e);
}
globalThis.dispatchEvent(new CustomEvent('tensorscope-inpage', { detail: serve }));
