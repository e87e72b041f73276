// Browser benchmark: a whole-tensor histogram of a remote file, on a local Range server that
// holds every response back `delay` ms. Prints MB/s (click to result, best of 3), the requests
// the server saw and the most it had in flight at once.
//   bash scripts/build-web.sh && node tests/e2e/bench-remote-hist.mjs [MiB=64] [--delay=50]
import path from 'node:path';
import { serveDist, launch } from './helpers.mjs';
import { startServer } from './server.mjs';
import { Viewer, tempDir, makeBig, timeWholeHistogram } from './viewer.mjs';

const args = process.argv.slice(2);
const mib = Number(args.find((a) => !a.startsWith('--')) ?? 64);
const delay = Number(args.find((a) => a.startsWith('--delay='))?.slice(8) ?? 50);

const tmp = tempDir();
const srv = await serveDist();
const browser = await launch();
const { tailElems } = makeBig(path.join(tmp.dir, 'zeros.safetensors'), mib * 2 ** 20);
const files = await startServer({ root: tmp.dir, port: 0, cors: true, delay });
try {
  const { page } = browser;
  const v = new Viewer(page, srv.url);
  await v.open(`?url=${encodeURIComponent(files.url + 'zeros.safetensors')}`);
  await v.selectTensor('tail');
  await v.waitHistogram();
  await page.locator('[data-testid=sel-whole]').check();
  let best = Infinity;
  let seen = {};
  for (let run = 0; run < 3; run++) {
    files.requests.length = 0;
    files.load.max = 0;
    const ms = await timeWholeHistogram(page);
    if ((await v.text('stat-zeros')) !== String(tailElems)) throw new Error('wrong zero count');
    if (ms < best) { best = ms; seen = { requests: files.requests.length, max_in_flight: files.load.max }; }
  }
  console.log(JSON.stringify({ mib, delay_ms: delay, mb_per_s: Math.round((mib * 2 ** 20) / 1e6 / (best / 1e3)), best_ms: Math.round(best), ...seen }));
} finally {
  await browser.close();
  await files.close();
  await srv.close();
  tmp.cleanup();
}
