// Browser benchmark: decode a ~1 GB tensor (a sparse file of zeros) in the viewer and report the
// longest main-thread task seen by a PerformanceObserver for long tasks (> 50 ms).
//   bash scripts/build-web.sh && node tests/e2e/bench-longtasks.mjs [GiB=1] [dtype=F32 ...]
// Prints one JSON line per dtype: { dtype, bytes, seconds, longtasks, longest_ms }.
import fs from 'node:fs';
import path from 'node:path';
import { serveDist, launch } from './helpers.mjs';
import { Viewer, tempDir } from './viewer.mjs';

const gib = Number(process.argv[2] ?? 1);
const dtypes = process.argv.slice(3).length ? process.argv.slice(3) : ['F32', 'BF16', 'F8_E4M3'];
const SIZE = { F32: 4, BF16: 2, F16: 2, F8_E4M3: 1, I8: 1 };

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
  await page.addInitScript(() => {
    window.__longtasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longtasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  for (const dtype of dtypes) {
    const file = path.join(tmp.dir, `big-${dtype}.safetensors`);
    const bytes = makeFile(file, dtype);
    const v = new Viewer(page, srv.url);
    await v.open();
    await v.pick(file);
    await v.waitLoaded(path.basename(file));
    await v.selectTensor('big');
    await v.waitHistogram();
    await page.locator('[data-testid=sel-whole]').check();
    await page.evaluate(() => { window.__longtasks = []; });
    const t0 = Date.now();
    await page.locator('[data-testid=run-hist]').click();
    await page.waitForFunction(
      () => /whole tensor/.test(document.querySelector('[data-testid=hist-what]')?.textContent ?? ''),
      null,
      { timeout: 600_000, polling: 500 },
    );
    const seconds = (Date.now() - t0) / 1000;
    const tasks = await page.evaluate(() => window.__longtasks);
    const count = await page.locator('[data-testid=stat-count]').textContent();
    console.log(JSON.stringify({
      dtype, bytes, values: Number(count), seconds, longtasks: tasks.length,
      longest_ms: tasks.length ? Math.max(...tasks) : 0,
    }));
  }
} finally {
  await browser.close();
  await srv.close();
  tmp.cleanup();
}
