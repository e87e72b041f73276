// A Tensorscope worker: the workers' own wasm (src/worker/, built for speed), reading and
// decoding off the page's thread (see src/io/workers.rs). Messages that arrive while the wasm
// loads are kept for it.
import init, { worker_main } from './tensorscope-worker.js';

const early = [];
self.onmessage = (e) => early.push(e);
await init();
worker_main(early);
