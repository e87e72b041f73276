// Browser benchmark: opening a safetensors header of N tensors (tiny data; 500k tensors is a
// 65 MB header, the size of the largest MoE headers) in the viewer. Prints the time from the
// pick to the table, and every main-thread task over 50 ms (PerformanceObserver, long tasks)
// from the pick until the name index is built.
//   bash scripts/build-web.sh && node tests/e2e/bench-open.mjs [tensors=500000] [--profile]
// --profile also prints the functions with the most self time (a CPU profile over CDP; build
// with WASM_OPT=0 to keep the wasm's function names).
import path from 'node:path';
import { serveDist, launch } from './helpers.mjs';
import { Viewer, manyTensors, tempDir, watchLongTasks, startProfile, printProfile } from './viewer.mjs';

const args = process.argv.slice(2);
const profile = args.includes('--profile');
const n = Number(args.find((a) => !a.startsWith('--')) ?? 500_000);

const srv = await serveDist();
const browser = await launch();
const tmp = tempDir();
try {
  const { page } = browser;
  const longtasks = await watchLongTasks(page);
  const file = path.join(tmp.dir, `open-${n}.safetensors`);
  const headerBytes = manyTensors(file, n);
  const v = new Viewer(page, srv.url);
  await v.open();
  await v.waitLoaded();
  const cdp = profile ? await startProfile(page) : null;
  await longtasks.reset();
  const t0 = Date.now();
  await v.pick(file);
  await page.waitForFunction((f) => document.querySelector('[data-testid=source]')?.textContent === f, path.basename(file), {
    timeout: 300_000,
    polling: 20,
  });
  await page.locator('[data-testid=loading]').waitFor({ state: 'detached', timeout: 300_000 });
  const loaded = (Date.now() - t0) / 1000;
  await v.tab('tensors');
  await page.waitForTimeout(1500); // the name index is built once the table shows
  const tasks = (await longtasks.durations()).map(Math.round);
  console.log(JSON.stringify({
    tensors: n, header_bytes: headerBytes, seconds_to_table: loaded,
    longtasks: tasks.length, longest_ms: tasks.length ? Math.max(...tasks) : 0, tasks_ms: tasks,
  }));
  if (profile) await printProfile(cdp);
} finally {
  await browser.close();
  await srv.close();
  tmp.cleanup();
}
