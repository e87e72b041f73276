// A small static file server for the viewer and its tests. Plain Node, no dependencies.
//
// - honours single-range `Range: bytes=a-b | a- | -n` requests with 206 + Content-Range,
//   answers 416 + `Content-Range: bytes */SIZE` when unsatisfiable; a multi-range request
//   gets the whole file with 200 (RFC 9110 lets a server ignore Range);
// - `--no-range` ignores Range entirely (always 200, full body, `Accept-Ranges: none`), to
//   test how the viewer copes with servers that cannot serve byte ranges;
// - `--cors` adds Access-Control-Allow-Origin: * (and exposes Content-Range etc.) and answers
//   preflights, so a page on another origin can read files through it;
// - sends ETag and Last-Modified and honours `If-Range`: a validator that no longer matches gets
//   the whole (new) file with 200, as RFC 9110 says, so a client can tell a file changed;
// - `delay` (ms) holds every response back, to test slow servers and races between opens;
// - serves .wasm as application/wasm (needed by WebAssembly.instantiateStreaming);
// - GET and HEAD only; paths cannot escape the root; a directory serves its index.html.
//
// CLI:     node tests/e2e/server.mjs --root dist [--port 8080] [--host 127.0.0.1] [--no-range] [--cors] [--quiet]
// Library: import { startServer } from './server.mjs';
//          const srv = await startServer({ root, port: 0 });  // port 0: a free port
//          srv.url, srv.port, srv.requests (log of {method, path, range, status}),
//          srv.load ({inFlight, max}: requests being answered now, and at most so far), await srv.close()

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Parse a Range header against a file of `size` bytes.
 * Returns null when the header is absent, malformed or asks for several ranges (serve 200),
 * 'unsatisfiable' (serve 416), or {start, end} with end inclusive (serve 206).
 */
export function parseRange(header, size) {
  if (!header) return null;
  const m = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!m) return null;
  const specs = m[1].split(',').map((s) => s.trim()).filter(Boolean);
  if (specs.length !== 1) return null;
  const r = /^(\d*)\s*-\s*(\d*)$/.exec(specs[0]);
  if (!r || (r[1] === '' && r[2] === '')) return null;
  // Numbers beyond 2^53 lose precision but stay ordered: the checks below still hold.
  let start;
  let end;
  if (r[1] === '') {
    // suffix range: the last N bytes
    const n = Number(r[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(r[1]);
    end = r[2] === '' ? size - 1 : Math.min(Number(r[2]), size - 1);
    if (r[2] !== '' && Number(r[2]) < start) return null; // invalid: ignore the header
    if (start >= size) return 'unsatisfiable';
  }
  return { start, end };
}

function resolveInRoot(root, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const full = path.resolve(root, '.' + path.posix.normalize('/' + decoded));
  if (full !== root && !full.startsWith(root + path.sep)) return null;
  return full;
}

/**
 * Start the server. Resolves once it listens.
 * @param {object} opts
 * @param {string} opts.root       directory to serve
 * @param {number} [opts.port=0]   0 picks a free port
 * @param {string} [opts.host='127.0.0.1']
 * @param {boolean} [opts.range=true]  false: ignore Range (the --no-range mode)
 * @param {boolean} [opts.cors=false]
 * @param {boolean} [opts.log=false]   print one line per request
 * @param {number} [opts.delay=0]     milliseconds to hold every response back
 * @param {string} [opts.fallback]    a file of root served (200) for every path that is none, as
 *                                    single-page apps' hosts answer
 */
export async function startServer({ root, port = 0, host = '127.0.0.1', range = true, cors = false, log = false, delay = 0, fallback = null } = {}) {
  if (!root) throw new Error('startServer: root is required');
  root = path.resolve(root);
  if (!fs.statSync(root).isDirectory()) throw new Error(`startServer: ${root} is not a directory`);
  const requests = [];
  const load = { inFlight: 0, max: 0 };

  const server = http.createServer((req, res) => {
    load.inFlight += 1;
    load.max = Math.max(load.max, load.inFlight);
    res.on('close', () => (load.inFlight -= 1));
    const url = new URL(req.url, 'http://localhost');
    const entry = { method: req.method, path: url.pathname, range: req.headers.range ?? null, status: 0, at: Date.now(), sent: 0 };
    requests.push(entry);
    const finish = (status, headers, body) => {
      if (delay > 0) return void setTimeout(() => send(status, headers, body), delay);
      send(status, headers, body);
    };
    const send = (status, headers, body) => {
      entry.status = status;
      entry.sent = Date.now();
      if (log) console.log(`${req.method} ${url.pathname}${entry.range ? ` [${entry.range}]` : ''} -> ${status}`);
      res.writeHead(status, headers);
      if (body === undefined || req.method === 'HEAD') res.end();
      else if (typeof body === 'string' || Buffer.isBuffer(body)) res.end(body);
      else body.on('error', () => res.destroy()).pipe(res);
    };

    const base = {};
    if (cors) {
      base['Access-Control-Allow-Origin'] = '*';
      base['Access-Control-Expose-Headers'] = 'Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified';
    }
    if (req.method === 'OPTIONS') {
      return finish(204, {
        ...base,
        ...(cors ? { 'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS', 'Access-Control-Allow-Headers': 'Range, If-Range', 'Access-Control-Max-Age': '600' } : {}),
        Allow: 'GET, HEAD, OPTIONS',
      });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return finish(405, { ...base, Allow: 'GET, HEAD, OPTIONS', 'Content-Type': 'text/plain' }, 'method not allowed\n');
    }

    let file = resolveInRoot(root, url.pathname);
    if (!file) return finish(400, { ...base, 'Content-Type': 'text/plain' }, 'bad path\n');
    let st;
    try {
      st = fs.statSync(file);
      if (st.isDirectory()) {
        file = path.join(file, 'index.html');
        st = fs.statSync(file);
      }
    } catch {
      if (!fallback) return finish(404, { ...base, 'Content-Type': 'text/plain' }, 'not found\n');
      file = path.join(root, fallback);
      st = fs.statSync(file);
    }
    if (!st.isFile()) return finish(404, { ...base, 'Content-Type': 'text/plain' }, 'not found\n');

    const size = st.size;
    const headers = {
      ...base,
      'Content-Type': MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Last-Modified': st.mtime.toUTCString(),
      ETag: `"${size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`,
      'Cache-Control': 'no-cache',
      'Accept-Ranges': range ? 'bytes' : 'none',
    };

    // If-Range: a range only while the validator still matches (a strong ETag or the date).
    const ifRange = req.headers['if-range'];
    const current = ifRange === undefined || ifRange === headers.ETag || ifRange === headers['Last-Modified'];
    const r = range && current ? parseRange(req.headers.range, size) : null;
    if (r === 'unsatisfiable') {
      return finish(416, { ...headers, 'Content-Range': `bytes */${size}`, 'Content-Type': 'text/plain' }, 'range not satisfiable\n');
    }
    if (r) {
      const len = r.end - r.start + 1;
      return finish(
        206,
        { ...headers, 'Content-Range': `bytes ${r.start}-${r.end}/${size}`, 'Content-Length': String(len) },
        req.method === 'HEAD' ? undefined : fs.createReadStream(file, { start: r.start, end: r.end }),
      );
    }
    return finish(
      200,
      { ...headers, 'Content-Length': String(size) },
      req.method === 'HEAD' ? undefined : fs.createReadStream(file),
    );
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actualPort = server.address().port;
  const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return {
    server,
    port: actualPort,
    url: `http://${shownHost}:${actualPort}/`,
    requests,
    load,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

function parseArgs(argv) {
  const opts = { root: '.', port: 8080, host: '127.0.0.1', range: true, cors: false, log: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--root') opts.root = value();
    else if (a === '--port') opts.port = Number(value());
    else if (a === '--host') opts.host = value();
    else if (a === '--no-range') opts.range = false;
    else if (a === '--cors') opts.cors = true;
    else if (a === '--quiet') opts.log = false;
    else if (a === '-h' || a === '--help') {
      console.log('usage: node server.mjs --root DIR [--port 8080] [--host 127.0.0.1] [--no-range] [--cors] [--quiet]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error('bad --port');
  return opts;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`server.mjs: ${e.message}`);
    process.exit(2);
  }
  const srv = await startServer(opts);
  console.log(
    `Serving ${path.resolve(opts.root)} at ${srv.url}` +
      `${opts.range ? '' : ' (Range ignored)'}${opts.cors ? ' (CORS on)' : ''}  -- Ctrl-C to stop`,
  );
  const stop = () => srv.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
