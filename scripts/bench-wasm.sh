#!/usr/bin/env bash
# Decode throughput and the open of a 500k-tensor header as wasm in headless Chromium
# (tests/wasm_bench.rs), next to the native
# numbers (tests/bench/decode.rs) for the same types. Prints numbers; asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh >/dev/null
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
echo "== wasm (opt-level 3, simd128) in headless Chromium"
cargo test --profile bench --target wasm32-unknown-unknown --test wasm_bench -- --nocapture 2>&1 | grep -E "wasm " || true
echo "== native"
TENSORSCOPE_BENCH_TYPES=F16,BF16,Q4_0,Q8_0,Q2_K,Q3_K,Q4_K,Q5_K,Q6_K,IQ4_XS,MXFP4 cargo bench -q --bench decode 2>&1 | grep -vE "^(input|$)"
