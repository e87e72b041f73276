// Browser benchmark: opening a safetensors header of N tensors (tiny data; 500k tensors is a
// 65 MB header, the size of the largest MoE headers) in the viewer. Prints the time from the
// pick to the table, and every main-thread task over 50 ms (PerformanceObserver, long tasks)
// from the pick until the name index is built.
//   bash scripts/build-web.sh && node tests/e2e/bench-open.mjs [tensors=500000] [--profile]
// --profile also prints the functions with the most self time (a CPU profile over CDP; build
// with WASM_OPT=0 to keep the wasm's function names).
import path from 'node:path';
import { serveDist, launch } from './helpers.mjs';
import { Viewer, manyTensors, tempDir, watchLongTasks } from './viewer.mjs';

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
  let cdp;
  if (profile) {
    cdp = await page.context().newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
  }
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
  if (profile) {
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
} finally {
  await browser.close();
  await srv.close();
  tmp.cleanup();
}
