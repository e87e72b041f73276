// A Hub repository, from a local server that answers like the Hub (the revision API naming the
// commit, the tree listing in pages joined by `Link`, `resolve` redirecting to a file server
// that honours Range, CORS throughout): the viewer's Variants view from `?url=hf://…&endpoint=`,
// and the JS API's `repo()`, whose JSON is the CLI's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { Viewer, fixture, session, tempDir } from './viewer.mjs';

const s = session();
const REPO = path.resolve(import.meta.dirname, '..', '..');
const SHA = '0123456789abcdef0123456789abcdef01234567';
const hub = { server: null, url: '', tmp: null, served: 0, card: null };

function files(dir, prefix = '') {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]).sort();
}

before(async () => {
  hub.tmp = tempDir();
  const copy = { 'tiny-Q8_0.gguf': fixture('kinds', 'model.gguf'), 'other-Q4_K_M.gguf': fixture('gguf_v3_le.gguf'),
    'mmproj-tiny-F16.gguf': fixture('kinds', 'mmproj-fit.gguf') };
  for (const [name, from] of Object.entries(copy)) fs.copyFileSync(from, path.join(hub.tmp.dir, name));
  fs.writeFileSync(path.join(hub.tmp.dir, 'README.md'), '# o/n\n');
  fs.mkdirSync(path.join(hub.tmp.dir, 'docs'));
  fs.writeFileSync(path.join(hub.tmp.dir, 'docs', 'notes.txt'), 'notes\n');
  hub.server = http.createServer((req, res) => {
    const cors = { 'Access-Control-Allow-Origin': '*',
      'Access-Control-Expose-Headers': 'Link, Content-Range, Content-Length, ETag, X-Repo-Commit' };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'Access-Control-Allow-Methods': 'GET', 'Access-Control-Allow-Headers': 'Range' });
      return res.end();
    }
    const u = new URL(req.url, hub.url);
    if (u.pathname === '/card.html' && hub.card) {
      res.writeHead(200, { 'Content-Type': 'text/html' }); // a model card page embedding the viewer
      return res.end(hub.card);
    }
    const all = files(hub.tmp.dir);
    const tree = `/api/models/o/n/tree/${SHA}`;
    if (u.pathname === '/api/models/o/n/revision/main') {
      res.writeHead(200, { ...cors, 'Content-Type': 'application/json', 'X-Repo-Commit': SHA });
      return res.end(JSON.stringify({ id: 'o/n', sha: SHA }));
    }
    if (u.pathname === tree) {
      const half = Math.floor(all.length / 2);
      const second = u.searchParams.get('cursor') === '2';
      const page = second ? all.slice(half) : all.slice(0, half);
      const items = page.map((f) => ({ type: 'file', path: f, size: fs.statSync(path.join(hub.tmp.dir, f)).size }));
      items.push({ type: 'directory', path: 'docs' });
      const headers = { ...cors, 'Content-Type': 'application/json' };
      if (!second) headers.Link = `<${hub.url}${tree}?recursive=true&cursor=2>; rel="next"`;
      res.writeHead(200, headers);
      return res.end(JSON.stringify(items));
    }
    const resolve = `/o/n/resolve/${SHA}/`;
    if (u.pathname.startsWith(resolve) && all.includes(decodeURIComponent(u.pathname.slice(resolve.length)))) {
      res.writeHead(302, { ...cors, Location: `${hub.url}/cdn/${u.pathname.slice(resolve.length)}`, 'X-Repo-Commit': SHA });
      return res.end();
    }
    if (u.pathname.startsWith('/cdn/') && u.pathname.includes('broken')) {
      res.writeHead(500, cors); // a file the storage cannot serve
      return res.end('storage is down');
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (u.pathname.startsWith('/cdn/') && m) {
      const f = path.join(hub.tmp.dir, decodeURIComponent(u.pathname.slice(5)));
      const len = fs.statSync(f).size;
      const [a, b] = [Number(m[1]), Math.min(Number(m[2]), len - 1)];
      const body = fs.readFileSync(f).subarray(a, b + 1);
      hub.served += body.length;
      res.writeHead(206, { ...cors, 'Content-Range': `bytes ${a}-${b}/${len}`, ETag: `"${len}"` });
      return res.end(body);
    }
    res.writeHead(404, cors);
    res.end();
  });
  await new Promise((r) => hub.server.listen(0, '127.0.0.1', r));
  hub.url = `http://127.0.0.1:${hub.server.address().port}`;
});

after(() => {
  hub.server?.close();
  hub.tmp?.cleanup();
});

/** The CLI's exit code, JSON and standard error, run without blocking this process (which is
 * also the Hub it reads). */
async function run(...args) {
  const bin = ['release', 'debug']
    .map((p) => path.join(REPO, 'target', p, 'tensorscope'))
    .filter((p) => fs.existsSync(p))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  assert.ok(bin, 'the CLI is built (cargo build)');
  const env = { ...process.env, HF_ENDPOINT: hub.url };
  return new Promise((resolve) =>
    execFile(bin, args, { env, maxBuffer: 64 << 20 }, (e, out, err) => resolve({ code: e ? e.code : 0, out, err })));
}

/** The CLI's JSON, which must exit 0. */
async function cli(...args) {
  const { code, out, err } = await run(...args);
  assert.equal(code, 0, err);
  return JSON.parse(out);
}

test('?url=hf://OWNER/NAME opens the Variants view of the repository at its commit; a row opens its variant', async () => {
  const { page } = s.browser;
  const v = new Viewer(page, s.srv.url);
  await page.goto(`${s.srv.url}?url=hf://o/n&endpoint=${encodeURIComponent(hub.url)}`);
  await page.locator('[data-testid=variants]').waitFor({ timeout: 15_000 });
  assert.match(await page.locator('[data-testid=variants] h2').textContent(), /2 separate models in o\/n at 0123456/);
  const rows = page.locator('[data-testid=variant-row]');
  assert.deepEqual(new Set(await rows.evaluateAll((r) => r.map((x) => x.dataset.name))), new Set(['Q8_0', 'Q4_K_M']));
  assert.equal(await page.locator('[data-testid=companion][data-name=mmproj-tiny-F16] [data-testid=companion-fits]').textContent(), 'fits Q8_0');
  assert.match(await page.locator('[data-testid=other-files]').textContent(), /README\.md, docs\/notes\.txt/);
  assert.ok(hub.served < 200_000, `${hub.served} bytes of files served`);
  await page.locator('[data-testid=variant-row][data-name=Q8_0]').click();
  await v.waitLoaded('variant Q8_0');
  assert.equal(await v.text('summary-tensors'), '4');
  assert.ok(new URL(page.url()).searchParams.get('url') === 'hf://o/n', page.url());
  await page.locator('[data-testid=variants-back]').click();
  await page.locator('[data-testid=variants]').waitFor();
  // The repository's web address in the URL box opens it too.
  await page.locator('[data-testid=url-input]').fill(`${hub.url}/o/n`);
  await page.locator('[data-testid=url-open]').click();
  await page.locator('[data-testid=variants] h2').filter({ hasText: 'o/n at' }).waitFor();
  assert.deepEqual(s.browser.errors, []);
});

test("the JS API's repo() gives the CLI's JSON, for a Hub repository and for files", async () => {
  const { page } = s.browser;
  await page.goto(s.srv.url + 'favicon.svg');
  const names = files(hub.tmp.dir).filter((n) => !n.includes('/'));
  const contents = names.map((n) => [...fs.readFileSync(path.join(hub.tmp.dir, n))]);
  const r = await page.evaluate(async ({ endpoint, names, contents }) => {
    const api = await import('/tensorscope.mjs');
    const given = names.map((n, i) => new File([new Uint8Array(contents[i])], n));
    const out = { hub: await api.repo('hf://o/n', { endpoint }), files: await api.repo(given) };
    try {
      await api.repo('https://example.org/file.gguf', { endpoint });
      out.bad = 'resolved';
    } catch (e) {
      out.bad = String(e.message ?? e);
    }
    return out;
  }, { endpoint: hub.url, names, contents });
  assert.deepEqual(r.hub, await cli('repo', 'hf://o/n', '--json'));
  const local = await cli('repo', hub.tmp.dir, '--json');
  assert.deepEqual(r.files.variants, local.variants);
  assert.deepEqual(r.files.companions, local.companions);
  assert.deepEqual(r.files.other_files, ['README.md']);
  assert.equal(r.files.revision, null);
  assert.match(r.bad, /not a model repository's address/);
});

test('a file the Hub cannot serve is said and listed among the other files; the rest opens', async () => {
  const { page } = s.browser;
  const broken = path.join(hub.tmp.dir, 'broken-Q5_0.gguf');
  fs.copyFileSync(fixture('kinds', 'model.gguf'), broken);
  try {
    await page.goto(`${s.srv.url}?url=hf://o/n&endpoint=${encodeURIComponent(hub.url)}`);
    await page.locator('[data-testid=variants]').waitFor({ timeout: 15_000 });
    const rows = page.locator('[data-testid=variant-row]');
    assert.deepEqual(new Set(await rows.evaluateAll((r) => r.map((x) => x.dataset.name))), new Set(['Q8_0', 'Q4_K_M']));
    assert.match(await page.locator('[data-testid=unreadable-files]').textContent(), /broken-Q5_0\.gguf \(.*500/);
    assert.match(await page.locator('[data-testid=other-files]').textContent(), /broken-Q5_0\.gguf/);
    const api = await page.evaluate(async (endpoint) => {
      const m = await import('/tensorscope.mjs');
      return m.repo('hf://o/n', { endpoint });
    }, hub.url);
    const { code, out, err } = await run('repo', 'hf://o/n', '--json');
    assert.equal(code, 1, 'the CLI says something could not be read');
    assert.match(err, /broken-Q5_0\.gguf could not be read/);
    assert.deepEqual(api, JSON.parse(out));
    assert.ok(api.other_files.includes('broken-Q5_0.gguf'));
  } finally {
    fs.rmSync(broken);
  }
});

test('the embed takes a repository: <tensor-scope src="hf://o/n" endpoint=…> shows its variants, a row opens one', async () => {
  const { page } = s.browser;
  // A model card page on another origin (the Hub's server here) embedding the repository.
  hub.card = `<!doctype html><script src="${s.srv.url}embed.js"></script>
    <tensor-scope src="hf://o/n" endpoint="${hub.url}" style="height:700px"></tensor-scope>`;
  await page.goto(`${hub.url}/card.html`);
  const frame = page.frameLocator('tensor-scope >> iframe');
  await frame.locator('[data-testid=variants]').waitFor({ timeout: 20_000 });
  const rows = frame.locator('[data-testid=variant-row]');
  assert.deepEqual(new Set(await rows.evaluateAll((r) => r.map((x) => x.dataset.name))), new Set(['Q8_0', 'Q4_K_M']));
  await frame.locator('[data-testid=variant-row][data-name=Q8_0]').click();
  await frame.locator('[data-testid=summary-tensors]').waitFor({ timeout: 20_000 });
  assert.equal(await frame.locator('[data-testid=summary-tensors]').textContent(), '4');
});
