#!/usr/bin/env bash
# The value diff of two safetensors files next to diffai's (PyPI diffai-python) on the same pair;
# prints seconds; asserts nothing.
#   bash scripts/bench-diff.sh [MB per file, default 512]
# Files: 64 F32 tensors of normal values; B is A with 8 tensors perturbed. Ours: `tensorscope diff
# --values all --json` (every element), and `--values sample` (64 windows of 4,096 values per
# tensor: 2 MiB read per pair whatever the tensor size). diffai: `diffai.diff_paths(a, b)`.
# Then two sparse 8 GiB files (256 F32 tensors of 32 MiB): time and bytes read (the `rchar` the
# kernel counts for the process) of a sampled diff and a headers-only one.
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

read_bytes() { # command...: bytes the command read through read/pread, as the kernel counts them
  sh -c '"$@" > /dev/null 2>&1; sed -n "s/^rchar: //p" /proc/$$/io' sh "$@"
}
python3 - <<'PY'
import json, os, struct
n, size = 256, 32 << 20
header = {f"model.layers.{i}.mlp.up_proj.weight": {"dtype": "F32", "shape": [size // 4 // 4096, 4096],
          "data_offsets": [i * size, (i + 1) * size]} for i in range(n)}
raw = json.dumps(header).encode()
raw += b" " * (-len(raw) % 8)
for path in ("big-a.safetensors", "big-b.safetensors"):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + n * size)
PY
echo "two sparse safetensors files of $(stat -c %s big-a.safetensors) bytes, 256 tensors each"
for v in sample none; do
  printf 'tensorscope diff --values %-7s %s s, %s bytes read\n' "$v" \
    "$(best "$cli" diff big-a.safetensors --vs big-b.safetensors --values "$v" --json)" \
    "$(read_bytes "$cli" diff big-a.safetensors --vs big-b.safetensors --values "$v" --json)"
done
