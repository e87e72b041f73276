// Browser benchmark: decode a ~1 GB tensor (a sparse file of zeros) in the viewer and report the
// longest main-thread task seen by a PerformanceObserver for long tasks (> 50 ms).
//   bash scripts/build-web.sh && node tests/e2e/bench-longtasks.mjs [GiB=1] [dtype=F32 ...]
//   node tests/e2e/bench-longtasks.mjs --files A.gguf B.gguf ... (tensor `w` of each, as
//   scripts/bench-ggml.sh writes them)
// Prints one JSON line per tensor: { dtype, bytes, seconds, mb_per_s, workers, longtasks, longest_ms }:
// seconds from the click to the result on screen, best of RUNS (3) runs; long tasks of all runs.
import fs from 'node:fs';
import path from 'node:path';
import { serveDist, launch } from './helpers.mjs';
import { Viewer, tempDir, watchLongTasks, timeWholeHistogram } from './viewer.mjs';

const given = process.argv[2] === '--files' ? process.argv.slice(3) : null;
const gib = given ? 0 : Number(process.argv[2] ?? 1);
const dtypes = given ?? (process.argv.slice(3).length ? process.argv.slice(3) : ['F32', 'BF16', 'F8_E4M3']);
const SIZE = { F32: 4, BF16: 2, F16: 2, F8_E4M3: 1, I8: 1 };
const RUNS = Number(process.env.RUNS ?? 3);

function makeFile(file, dtype) {
  const bytes = Math.floor((gib * 1024 ** 3) / 1024) * 1024;
  const header = { big: { dtype, shape: [bytes / SIZE[dtype]], data_offsets: [0, bytes] } };
  let json = JSON.stringify(header);
  json += ' '.repeat(Math.ceil(json.length / 8) * 8 - json.length);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json)]));
  fs.truncateSync(file, 8 + json.length + bytes);
  return bytes;
}

const srv = await serveDist();
const browser = await launch();
const tmp = tempDir();
try {
  const { page } = browser;
  const longtasks = await watchLongTasks(page);
  for (const dtype of dtypes) {
    const file = given ? dtype : path.join(tmp.dir, `big-${dtype}.safetensors`);
    const bytes = given ? fs.statSync(file).size : makeFile(file, dtype);
    const v = new Viewer(page, srv.url);
    await v.open();
    await v.pick(file);
    await v.waitLoaded(path.basename(file));
    await v.selectTensor(given ? 'w' : 'big');
    await v.waitHistogram();
    await page.locator('[data-testid=sel-whole]').check();
    // Timed in the page, best of RUNS.
    let seconds = Infinity;
    let tasks = [];
    for (let run = 0; run < RUNS; run++) {
      await longtasks.reset();
      const ms = await timeWholeHistogram(page);
      seconds = Math.min(seconds, ms / 1000);
      tasks = tasks.concat(await longtasks.durations());
    }
    const count = await page.locator('[data-testid=stat-count]').textContent();
    const workers = Number(await page.locator('[data-testid=hist-what]').getAttribute('data-workers'));
    console.log(JSON.stringify({
      dtype: given ? path.basename(file, path.extname(file)) : dtype, bytes, values: Number(count), seconds,
      mb_per_s: Math.round(bytes / seconds / 1e6), workers, longtasks: tasks.length,
      longest_ms: tasks.length ? Math.max(...tasks) : 0,
    }));
  }
} finally {
  await browser.close();
  await srv.close();
  tmp.cleanup();
}
