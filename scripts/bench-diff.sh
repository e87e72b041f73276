#!/usr/bin/env bash
# The value diff of two safetensors files next to diffai's (PyPI diffai-python) on the same pair;
# prints seconds; asserts nothing.
#   bash scripts/bench-diff.sh [MB per file, default 512]
# Files: 64 F32 tensors of normal values; B is A with 8 tensors perturbed. Ours: `tensorscope diff
# --values all --json` (every element), and `--values sample` (64 windows of 4,096 values per
# tensor: 2 MiB read per pair whatever the tensor size). diffai: `diffai.diff_paths(a, b)`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${CARGO_TARGET_DIR:-$root/target}/bench-diff"
mb="${1:-512}"
mkdir -p "$work"
cd "$work"
if [ ! -x venv/bin/python ]; then
  python3 -m venv venv
  venv/bin/pip -q install numpy==2.4.6 safetensors==0.8.0 diffai-python >&2
fi
(cd "$root" && cargo build -q --release --bin tensorscope)
cli="${CARGO_TARGET_DIR:-$root/target}/release/tensorscope"
venv/bin/python - "$mb" <<'PY'
import sys
import numpy as np
from safetensors.numpy import save_file
mb = int(sys.argv[1])
n = mb * (1 << 20) // 4 // 64
rng = np.random.default_rng(1)
a = {f"model.layers.{i}.mlp.up_proj.weight": (rng.standard_normal(n) * 0.02).astype(np.float32) for i in range(64)}
b = {k: (v + np.float32(1e-3) if i % 8 == 0 else v) for i, (k, v) in enumerate(a.items())}
save_file(a, "a.safetensors")
save_file(b, "b.safetensors")
PY
best() { # command...: best wall time of 3 runs, in seconds
  local best=999999 s e ms
  for _ in 1 2 3; do
    s=$(date +%s%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s%N)
    ms=$(( (e - s) / 1000000 )); [ "$ms" -lt "$best" ] && best=$ms
  done
  awk -v m="$best" 'BEGIN { printf "%.3f", m / 1000 }'
}
echo "two safetensors files of $(stat -c %s a.safetensors) bytes, 64 tensors each, 8 changed"
echo "tensorscope diff --values all     $(best "$cli" diff a.safetensors --vs b.safetensors --values all --json) s"
echo "tensorscope diff --values sample  $(best "$cli" diff a.safetensors --vs b.safetensors --json) s"
echo "tensorscope diff --values none    $(best "$cli" diff a.safetensors --vs b.safetensors --values none --json) s"
echo "diffai.diff_paths                 $(best venv/bin/python -c 'import diffai; diffai.diff_paths("a.safetensors", "b.safetensors")') s"
