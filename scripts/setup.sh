#!/usr/bin/env bash
# Install what Tensorscope's build and tests need, skipping whatever is already there.
# Idempotent: safe to run (or `source`) any number of times. Called by serve.sh and test.sh.
#
#   rustup target wasm32-unknown-unknown, rustfmt, clippy
#   rustup target aarch64-unknown-linux-gnu, gcc-aarch64-linux-gnu and qemu-user (apt), for the
#     arm64 (NEON) lane of the tests, cross-built and run under qemu
#   rustup target x86_64-pc-windows-gnu and gcc-mingw-w64-x86-64 (apt), to lint the Windows build
#   rustup target aarch64-apple-darwin, to lint the engine's layers for Apple silicon
#   wasm-bindgen-cli at exactly the wasm-bindgen version in Cargo.lock (wasm-bindgen + wasm-bindgen-test-runner)
#   chromium + chromium-driver (apt), for wasm-bindgen-test and the Playwright suite
#   tests/e2e/node_modules (npm ci): playwright-core, binaryen@132.0.0 (wasm-opt)
#
# Environment: SETUP_SKIP_BROWSER=1 skips chromium and the other targets' lanes (enough for
# scripts/serve.sh).

_ts_setup() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  local apt_updated=""
  apt_install() {
    if [ -z "$apt_updated" ]; then
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q || return 1
      apt_updated=1
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
  }
  say() { printf '[setup] %s\n' "$*"; }

  # --- Rust --------------------------------------------------------------------------------
  if ! command -v cargo >/dev/null 2>&1; then
    say "cargo not found: install Rust with rustup (https://rustup.rs) first"; return 1
  fi
  if command -v rustup >/dev/null 2>&1; then
    local installed
    installed="$(rustup target list --installed 2>/dev/null || true)"
    if ! grep -qx wasm32-unknown-unknown <<<"$installed"; then
      say "adding rust target wasm32-unknown-unknown"
      rustup target add wasm32-unknown-unknown || return 1
    fi
    local comp
    installed="$(rustup component list --installed 2>/dev/null || true)"
    for comp in rustfmt clippy; do
      if ! grep -q "^$comp" <<<"$installed"; then
        say "adding rust component $comp"
        rustup component add "$comp" || return 1
      fi
    done
  fi

  # --- wasm-bindgen-cli, pinned to Cargo.lock ------------------------------------------------
  local wb_want wb_have
  wb_want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$root/Cargo.lock")"
  if [ -z "$wb_want" ]; then say "no wasm-bindgen in Cargo.lock"; return 1; fi
  wb_have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
  local wbt_have
  wbt_have="$(wasm-bindgen-test-runner --version 2>/dev/null | awk '{print $2}' || true)"
  if [ "$wb_have" != "$wb_want" ] || [ "$wbt_have" != "$wb_want" ]; then
    say "installing wasm-bindgen-cli $wb_want (have: ${wb_have:-none}); takes ~4-5 min cold"
    # No --locked: a dependency version locked by wasm-bindgen-cli is missing from the registry mirror.
    cargo install wasm-bindgen-cli --version "$wb_want" --force || return 1
  fi

  # --- Chromium + chromedriver ----------------------------------------------------------------
  if [ "${SETUP_SKIP_BROWSER:-}" != 1 ]; then
    if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
      say "installing chromium and chromium-driver (apt)"
      apt_install chromium chromium-driver || return 1
    fi
  fi

  # --- Other targets: arm64 (a cross linker, and qemu-user to run the NEON kernels' tests),
  # Windows (a C cross compiler for ring's build script, to lint) and macOS on arm64 (to lint) ---
  if [ "${SETUP_SKIP_BROWSER:-}" != 1 ] && [ "$(uname -m)" = x86_64 ]; then
    local target
    for target in aarch64-unknown-linux-gnu x86_64-pc-windows-gnu aarch64-apple-darwin; do
      if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        say "adding rust target $target"
        rustup target add "$target" || return 1
      fi
    done
    if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
      say "installing gcc-aarch64-linux-gnu and qemu-user (apt)"
      apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user || return 1
    fi
    if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
      say "installing gcc-mingw-w64-x86-64 (apt)"
      apt_install gcc-mingw-w64-x86-64 || return 1
    fi
  fi

  # --- Node + npm packages for tests/e2e (playwright-core, binaryen's wasm-opt) ---------------
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "installing nodejs and npm (apt)"
    apt_install nodejs npm || return 1
  fi
  local e2e="$root/tests/e2e" stamp lock_hash
  stamp="$e2e/node_modules/.tensorscope-lock.sha256"
  lock_hash="$(sha256sum "$e2e/package-lock.json" | awk '{print $1}')"
  if [ ! -d "$e2e/node_modules" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ]; then
    say "npm ci in tests/e2e"
    (cd "$e2e" && npm ci --no-audit --no-fund --loglevel=error) || return 1
    echo "$lock_hash" > "$stamp"
  fi
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  _ts_setup
else
  _ts_setup || return 1
fi
