#!/usr/bin/env bash
# Decode + histogram next to ggml's own dequantization, per type, in one run. Prints MB/s of
# encoded input (best of a few runs) and ratios; asserts nothing.
#   ggml      dequantize_row_* from the ggml-quants.c vendored by the llama-cpp-python sdist
#             (PyPI), built with gcc -O3 -march=native (scripts/bench/ggml_dequant.c)
#   +count    the plain exact histogram on ggml's kernel: each row dequantized into cache, then
#             each value counted into the 65,536 buckets of its top 16 bits, as ours counts
#   map       mapping the cached file, faulting its pages in and unmapping it: what any reader
#             of the file in place pays before a value is read (ours included; the two above
#             read from memory). Each file is first dropped from the page cache and read back
#             once, so it is cached as a file read from disk (or downloaded) is, in large folios;
#             a file whose pages were faulted in one by one (a mapping without huge pages) sits in
#             4 KiB pages, each mapped on its own (a 64 MiB F16 histogram took 1.4x as long)
#   ours 1t   `tensorscope hist --json` of the whole tensor, TENSORSCOPE_THREADS=1 (process start,
#             reading and JSON included); ggml and ours take turns for ROUNDS rounds (default 5),
#             each keeping its best
#   ours Nt   the same on every core
#   wasm      the viewer's whole-tensor histogram in headless Chromium, on its worker pool (click
#             to result; tests/e2e/bench-longtasks.mjs over dist/, built if missing)
#   gguf-py   gguf.quants.dequantize + numpy.histogram (PyPI gguf, in a venv)
# Every block type ggml dequantizes, or those named in TYPES (like TYPES="Q4_K Q8_0"). The first
# run quantizes the 64 MiB tensors (the i-quants take a minute); later runs read them back.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Chromium and the e2e packages for the wasm column (skipped where present).
bash "$root/scripts/setup.sh" >&2
work="${CARGO_TARGET_DIR:-$root/target}/bench-ggml"
version=0.3.36
mkdir -p "$work/out"
cd "$work"
if [ ! -d "llama_cpp_python-$version" ]; then
  echo "[bench-ggml] pip download llama-cpp-python==$version (sdist)" >&2
  pip download --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d . >&2
  tar xzf "llama_cpp_python-$version.tar.gz"
fi
g="llama_cpp_python-$version/vendor/llama.cpp/ggml"
if [ ! -x deq ] || [ "$root/scripts/bench/ggml_dequant.c" -nt deq ]; then
  echo "[bench-ggml] building ggml's dequantization" >&2
  gcc -O3 -march=native -I"$g/include" -I"$g/src" -c "$g/src/ggml-quants.c" -o quants.o
  gcc -O3 -march=native -I"$g/include" -I"$g/src" -c "$root/scripts/bench/ggml_dequant.c" -o harness.o
  gcc quants.o harness.o -o deq -lm
fi
(cd "$root" && cargo build -q --release --bin tensorscope)
cli="${CARGO_TARGET_DIR:-$root/target}/release/tensorscope"
if [ ! -x venv/bin/python ]; then
  python3 -m venv venv && venv/bin/pip -q install gguf numpy >&2 || true
fi
threads=$(nproc)
rounds=${ROUNDS:-5}

# wall_us CMD...: one run's wall time in µs, from bash's own clock: a `date` process on each
# side added a millisecond or two, a sixth of a fast type's run.
wall_us() {
  local s e
  s=$EPOCHREALTIME; "$@" > /dev/null; e=$EPOCHREALTIME
  echo $(( 10#${e//[.,]/} - 10#${s//[.,]/} ))
}

# The contestants take turns, round after round (this machine's speed drifts by a third over
# minutes): ggml's whole run, then each type on 1 thread and on every core; each keeps its best.
declare -A ggml_best count_best map_best one_us all_us
order=()
for round in $(seq "$rounds"); do
  while read -r t mbs count map; do
    [ "$round" = 1 ] && order+=("$t")
    [ "${ggml_best[$t]:-0}" -lt "$mbs" ] && ggml_best[$t]=$mbs
    [ "${count_best[$t]:-0}" -lt "$count" ] && count_best[$t]=$count
    [ "${map_best[$t]:-0}" -lt "$map" ] && map_best[$t]=$map
  done < <(./deq out ${TYPES:-})
  if [ "$round" = 1 ]; then
    # Cached as a file read from disk is (see `map` above): dropped, then read back in order.
    for t in "${order[@]}"; do
      dd if="out/$t.gguf" iflag=nocache count=0 status=none
      cat "out/$t.gguf" > /dev/null
    done
  fi
  for t in "${order[@]}"; do
    f="out/$t.gguf"
    us=$(TENSORSCOPE_THREADS=1 wall_us "$cli" hist "$f" --tensor w --json)
    [ "${one_us[$t]:-999999999}" -gt "$us" ] && one_us[$t]=$us
    us=$(TENSORSCOPE_THREADS=$threads wall_us "$cli" hist "$f" --tensor w --json)
    [ "${all_us[$t]:-999999999}" -gt "$us" ] && all_us[$t]=$us
  done
done
for t in "${order[@]}"; do echo "$t ${ggml_best[$t]} ${count_best[$t]} ${map_best[$t]}"; done > ggml.txt

[ -f "$root/dist/index.html" ] || (cd "$root" && bash scripts/build-web.sh > /dev/null)
declare -A wasm
files=()
for t in "${order[@]}"; do files+=("$work/out/$t.gguf"); done
while read -r line; do
  t=$(sed -E 's/.*"dtype":"([^"]+)".*/\1/' <<< "$line")
  wasm[$t]=$(sed -E 's/.*"mb_per_s":([0-9]+).*/\1/' <<< "$line")
done < <(cd "$root" && node tests/e2e/bench-longtasks.mjs --files "${files[@]}" 2> /dev/null | grep mb_per_s || true)

printf '%-8s %8s %8s %8s %8s %8s %8s %8s   %-26s %-10s %s\n' type ggml +count map "ours 1t" "ours ${threads}t" wasm gguf-py \
  "ours/ggml (1t, ${threads}t, wasm)" "1t/+count" "${threads}t/1t"
while read -r t ggml count map; do
  f="out/$t.gguf"
  size=$(stat -c %s "$f")
  one=$(( size / (one_us[$t] > 0 ? one_us[$t] : 1) ))
  all=$(( size / (all_us[$t] > 0 ? all_us[$t] : 1) ))
  py=-
  if [ -x venv/bin/python ]; then
    py=$(venv/bin/python - "$f" "$t" <<'PY' 2>/dev/null || echo -
import sys, time
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
r = GGUFReader(sys.argv[1]); t = r.tensors[0]
raw = np.asarray(t.data)
best = 1e9
for _ in range(2):
    t0 = time.perf_counter()
    v = dequantize(raw, t.tensor_type).astype(np.float32, copy=False)
    np.histogram(v[np.isfinite(v)], bins=64)
    best = min(best, time.perf_counter() - t0)
print(int(raw.nbytes / best / 1e6))
PY
)
  fi
  # No browser figure (the page could not be built or run) prints as "-".
  w=${wasm[$t]:--}
  printf '%-8s %8s %8s %8s %8s %8s %8s %8s   %-26s %-10s %s\n' "$t" "$ggml" "$count" "$map" "$one" "$all" "$w" "$py" \
    "$(awk -v a="$one" -v b="$all" -v w="$w" -v g="$ggml" \
      'BEGIN { printf "%.2f, %.2f, %s", a / g, b / g, (w == "-" ? "-" : sprintf("%.2f", w / g)) }')" \
    "$(awk -v a="$one" -v c="$count" 'BEGIN { printf "%.2f", a / (c > 0 ? c : 1) }')" \
    "$(awk -v a="${one_us[$t]}" -v b="${all_us[$t]}" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }')"
done < ggml.txt
