// Service worker: keeps the viewer working offline after the first visit.
// Network first (so a new build shows at once), falling back to the cached copy when the
// network or the server is gone. Only the app's own GET requests are handled: checkpoints read
// by Range requests, and anything on other origins, go straight to the network.
const CACHE = 'tensorscope-v6';
const SHELL = [
  './',
  'index.html',
  'tensorscope-web.js',
  'tensorscope-web_bg.wasm',
  'worker.js',
  'inpage.js',
  'tensorscope-worker.js',
  'tensorscope-worker_bg.wasm',
  'style.css',
  'favicon.svg',
  'embed.js',
  'samples/tensorscope-sample-16L-Q4_K_M.gguf',
  'samples/tensorscope-sample-st/model.safetensors.index.json',
  'samples/tensorscope-sample-st/config.json',
  'samples/tensorscope-sample-st/model-00001-of-00002.safetensors',
  'samples/tensorscope-sample-st/model-00002-of-00002.safetensors',
  'samples/gguf_v3_le.gguf',
  'samples/gguf_all_types.gguf',
  'samples/st_all_numpy_dtypes.safetensors',
];

self.addEventListener('install', (e) => {
  e.waitUntil(
    caches
      .open(CACHE)
      .then((c) => c.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (e) => {
  e.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || req.headers.has('range') || url.origin !== self.location.origin) return;
  e.respondWith(
    fetch(req)
      .then((res) => {
        if (res.ok && res.status === 200) {
          // Kept by path alone: a page's query (`?url=` with a signed URL's token) is not stored,
          // and the cache holds one copy of each of the app's files.
          const copy = res.clone();
          caches.open(CACHE).then((c) => c.put(url.origin + url.pathname, copy));
        }
        return res;
      })
      .catch(() =>
        caches
          .match(req, { ignoreSearch: url.pathname.endsWith('/') || url.pathname.endsWith('.html') })
          .then((hit) => hit || Promise.reject(new Error('offline and not cached: ' + url.pathname))),
      ),
  );
});
