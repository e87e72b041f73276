// Browser benchmark: opening a remote set of N safetensors shards behind an index, on a local
// Range server that holds every response back `delay` ms. Prints the time from the URL's
// submit to the loaded set in round trips, the server's view (requests in flight on average,
// time with nothing in flight), and the same ranges fetched by plain JavaScript the way the
// viewer asks for them (twelve queued, past the HTTP cache): the floor this browser and server
// allow.
//   bash scripts/build-web.sh && node tests/e2e/bench-remote.mjs [shards=500] [--delay=50] [--profile]
import { serveDist, launch } from './helpers.mjs';
import { startServer } from './server.mjs';
import { Viewer, serverView, shardSet, tempDir, startProfile, printProfile } from './viewer.mjs';

const args = process.argv.slice(2);
const profile = args.includes('--profile');
const shards = Number(args.find((a) => !a.startsWith('--')) ?? 500);
const delay = Number(args.find((a) => a.startsWith('--delay='))?.slice(8) ?? 50);

const tmp = tempDir();
const srv = await serveDist();
const browser = await launch();
const { headerBytes, indexBytes } = shardSet(tmp.dir, shards, 40);
const files = await startServer({ root: tmp.dir, port: 0, cors: true, delay });
try {
  const { page } = browser;
  const v = new Viewer(page, srv.url);
  await v.open();
  const cdp = profile ? await startProfile(page) : null;
  files.requests.length = 0;
  const index = files.url + 'model.safetensors.index.json';
  await page.locator('[data-testid=url-input]').fill(index);
  // The clock runs from the click to the set's file count shown, as the page sees them
  // (Date.now: the server's clock too).
  await page.evaluate((n) => {
    const button = document.querySelector('[data-testid=url-open]');
    window.__clicked = new Promise((ok) => button.addEventListener('click', () => ok(Date.now()), { capture: true, once: true }));
    window.__shown = new Promise((ok) => {
      const seen = new MutationObserver(() => {
        if (document.querySelector('[data-testid=summary-files]')?.textContent === String(n)) {
          seen.disconnect();
          ok(Date.now());
        }
      });
      seen.observe(document.body, { subtree: true, childList: true, characterData: true });
    });
  }, shards);
  await page.locator('[data-testid=url-open]').click();
  const t0 = await page.evaluate(() => window.__clicked);
  const ms = (await page.evaluate(() => window.__shown)) - t0;
  if (profile) await printProfile(cdp);
  const first = Math.min(...files.requests.map((r) => r.at)) - t0;
  const last = Math.max(...files.requests.map((r) => r.sent)) - t0;
  const viewer = { ms, to_first_request_ms: first, after_last_response_ms: ms - last, round_trips: Number((ms / delay).toFixed(1)), requests: files.requests.length, ...serverView(files.requests) };

  // The floor: the index, then every shard's header range, by plain fetch.
  const ranges = files.requests.filter((r) => r.path.endsWith('.safetensors')).map((r) => [r.path, r.range]);
  files.requests.length = 0;
  const plainMs = await page.evaluate(
    async ({ base, ranges }) => {
      const t0 = performance.now();
      await (await fetch(base + 'model.safetensors.index.json')).arrayBuffer();
      let next = 0;
      const lane = async () => {
        while (next < ranges.length) {
          const [p, range] = ranges[next++];
          await (await fetch(base + p.slice(1), { headers: { Range: range }, cache: 'no-store' })).arrayBuffer();
        }
      };
      await Promise.all(Array.from({ length: 12 }, lane));
      return performance.now() - t0;
    },
    { base: files.url, ranges },
  );
  const plain = { ms: Math.round(plainMs), round_trips: Number((plainMs / delay).toFixed(1)), ...serverView(files.requests) };
  console.log(JSON.stringify({ shards, delay_ms: delay, ideal_round_trips: Math.ceil(shards / 6) + 2, header_bytes: headerBytes, index_bytes: indexBytes, viewer, plain_fetch: plain }));
} finally {
  await browser.close();
  await srv.close();
  await files.close();
  tmp.cleanup();
}
