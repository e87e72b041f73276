#!/usr/bin/env bash
# Build the browser viewer into dist/ (no trunk), as two wasm binaries:
#   the page's:    cargo build --profile web (size) --bin tensorscope-web -> wasm-bindgen --target web -> wasm-opt -Oz
#   the workers':  cargo build --profile worker (speed) -p tensorscope-worker -> wasm-bindgen --target web -> wasm-opt -O3
# then + index.html, www/*.
# Prints raw and gzipped sizes. Environment: WASM_OPT=0 skips wasm-opt (faster, bigger).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
SETUP_SKIP_BROWSER=1 source scripts/setup.sh

target_dir="${CARGO_TARGET_DIR:-$root/target}"
name=tensorscope-web
dist="$root/dist"

locked=()
if [ "${CI:-}" = true ]; then locked=(--locked); fi
echo "[build-web] cargo build --profile web --target wasm32-unknown-unknown --bin $name"
cargo build "${locked[@]}" --profile web --target wasm32-unknown-unknown --bin "$name"
raw_wasm="$target_dir/wasm32-unknown-unknown/web/$name.wasm"
worker=tensorscope-worker
echo "[build-web] cargo build --profile worker --target wasm32-unknown-unknown -p $worker"
cargo build "${locked[@]}" --profile worker --target wasm32-unknown-unknown -p "$worker"
raw_worker="$target_dir/wasm32-unknown-unknown/worker/$worker.wasm"

rm -rf "$dist"
mkdir -p "$dist"
echo "[build-web] wasm-bindgen --target web"
wasm-bindgen "$raw_wasm" --target web --no-typescript --out-dir "$dist"
wasm-bindgen "$raw_worker" --target web --no-typescript --out-dir "$dist"
bg="$dist/${name}_bg.wasm"
worker_bg="$dist/${worker}_bg.wasm"
pre_opt=$(stat -c %s "$bg")

if [ "${WASM_OPT:-1}" != 0 ]; then
  echo "[build-web] wasm-opt -Oz (binaryen 132 from npm)"
  # Plain -Oz: --all-features yields wasm Chromium rejects; Debian's binaryen 108 yields broken tables.
  "$root/tests/e2e/node_modules/.bin/wasm-opt" -Oz "$bg" -o "$bg.opt"
  mv "$bg.opt" "$bg"
  echo "[build-web] wasm-opt -O3 the workers' wasm"
  "$root/tests/e2e/node_modules/.bin/wasm-opt" -O3 "$worker_bg" -o "$worker_bg.opt"
  mv "$worker_bg.opt" "$worker_bg"
fi

cp index.html "$dist/"
if [ -d www ] && [ -n "$(ls -A www)" ]; then cp -R www/. "$dist/"; fi

if [ "${MINIFY:-1}" != 0 ]; then
  echo "[build-web] esbuild --minify (JS glue and CSS)"
  esbuild="$root/tests/e2e/node_modules/.bin/esbuild"
  for js in "$name" "$worker"; do
    "$esbuild" "$dist/$js.js" --minify --format=esm --log-level=warning --outfile="$dist/$js.min.js"
    mv "$dist/$js.min.js" "$dist/$js.js"
  done
  "$esbuild" "$dist/style.css" --minify --log-level=warning --outfile="$dist/style.min.css"
  mv "$dist/style.min.css" "$dist/style.css"
fi

size_line() { # file
  local raw gz
  raw=$(stat -c %s "$1")
  gz=$(gzip -9 -c "$1" | wc -c)
  printf '  %-28s %9d B raw %9d B gzip\n' "${1#"$dist"/}" "$raw" "$gz"
  total_raw=$((total_raw + raw)); total_gz=$((total_gz + gz))
}
total_raw=0; total_gz=0
echo "[build-web] dist/ (wasm before wasm-opt: $pre_opt B)"
# The viewer page loads its wasm, its JS glue, the CSS and the worker script; the workers load
# their own wasm and glue, off the page's critical path; embed.js (for other pages) and the
# service worker are listed apart.
for f in "$dist/${name}_bg.wasm" "$dist/$name.js" "$dist/style.css" "$dist/worker.js"; do size_line "$f"; done
printf '  %-28s %9d B raw %9d B gzip\n' "total page wasm+js+css+worker" "$total_raw" "$total_gz"
total_raw=0; total_gz=0
for f in "$dist/${worker}_bg.wasm" "$dist/$worker.js"; do size_line "$f"; done
printf '  %-28s %9d B raw %9d B gzip\n' "total workers' wasm+js" "$total_raw" "$total_gz"
for f in "$dist/embed.js" "$dist/sw.js"; do if [ -f "$f" ]; then size_line "$f"; fi; done
