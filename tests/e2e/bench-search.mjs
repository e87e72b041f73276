// Browser benchmark: per-keystroke cost of the tensor search at 500k tensors. Opens a
// safetensors header of N tensors (tiny data), types a query one character at a time into the
// search box and prints, per keystroke, the time from the input event to the second frame after
// it (the table filtered and painted; two frames at 60 Hz are ~33 ms even for no work).
//   bash scripts/build-web.sh && node tests/e2e/bench-search.mjs [tensors=500000] [query]
import path from 'node:path';
import { serveDist, launch } from './helpers.mjs';
import { Viewer, manyTensors, tempDir } from './viewer.mjs';

const n = Number(process.argv[2] ?? 500_000);
const query = process.argv[3] ?? 'layers.42.mlp.experts.7';

const srv = await serveDist();
const browser = await launch();
const tmp = tempDir();
try {
  const { page } = browser;
  const file = path.join(tmp.dir, `search-${n}.safetensors`);
  manyTensors(file, n);
  const v = new Viewer(page, srv.url);
  await v.open();
  await v.pick(file);
  await page.waitForFunction((f) => document.querySelector('[data-testid=source]')?.textContent === f, path.basename(file), {
    timeout: 300_000,
  });
  await page.locator('[data-testid=loading]').waitFor({ state: 'detached', timeout: 300_000 });
  await v.tab('tensors');
  // A moment, as a user takes before typing: the viewer indexes the names once the table shows.
  await page.waitForTimeout(1000);
  const box = page.locator('[data-testid=table-search]');
  const times = [];
  for (let i = 1; i <= query.length; i++) {
    const ms = await box.evaluate(async (el, q) => {
      const t0 = performance.now();
      el.value = q;
      // The viewer filters in the input handler itself (no debounce): the work is synchronous,
      // and the second frame after it has painted the table.
      el.dispatchEvent(new Event('input', { bubbles: true }));
      const handled = performance.now() - t0;
      await new Promise((r) => requestAnimationFrame(r));
      await new Promise((r) => requestAnimationFrame(r));
      return [handled, performance.now() - t0];
    }, query.slice(0, i));
    times.push(ms.map(Math.round));
  }
  const count = await page.locator('[data-testid=table-count]').textContent();
  const stats = (k) => {
    const v = times.map((t) => t[k]).sort((a, b) => a - b);
    return { median_ms: v[v.length >> 1], max_ms: v.at(-1) };
  };
  // handled: the input handler (filtering, the table's update); painted: until two frames after.
  console.log(JSON.stringify({ tensors: n, query, handled: stats(0), painted: stats(1), per_keystroke: times, shown: count }));
} finally {
  await browser.close();
  await srv.close();
  tmp.cleanup();
}
