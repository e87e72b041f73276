#!/usr/bin/env bash
# Our KV-cache estimate next to modelinfo-cli's (PyPI) on the same GGUF headers; prints both,
# asserts nothing. The GGUFs carry real models' attention keys and one tiny tensor. modelinfo-cli
# sizes every layer for the full context; llama.cpp (and so we) give gemma 2's sliding-window
# layers their window plus a micro-batch.
#   bash scripts/compare-estimates.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${CARGO_TARGET_DIR:-$root/target}/compare-estimates"
mkdir -p "$work"
cd "$work"
if [ ! -x venv/bin/modelinfo ]; then
  python3 -m venv venv
  venv/bin/pip -q install numpy==2.4.6 gguf==0.19.0 modelinfo-cli==1.4.4 >&2
fi
(cd "$root" && cargo build -q --release --bin tensorscope)
cli="${CARGO_TARGET_DIR:-$root/target}/release/tensorscope"
venv/bin/python - <<'PY'
import numpy as np
from gguf import GGUFWriter
models = {
    # name: (arch, layers, heads, kv heads, embedding, context, head size, sliding window)
    "llama-3-8b": ("llama", 32, 32, 8, 4096, 8192, None, None),
    "gemma-2-9b": ("gemma2", 42, 16, 8, 3584, 8192, 256, 4096),
    "qwen2.5-7b": ("qwen2", 28, 28, 4, 3584, 32768, None, None),
}
for name, (arch, layers, heads, kv, emb, ctx, head, swa) in models.items():
    w = GGUFWriter(f"{name}.gguf", arch)
    w.add_block_count(layers); w.add_head_count(heads); w.add_head_count_kv(kv)
    w.add_embedding_length(emb); w.add_context_length(ctx)
    if head: w.add_key_length(head); w.add_value_length(head)
    if swa: w.add_sliding_window(swa)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(256, np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
for m in llama-3-8b gemma-2-9b qwen2.5-7b; do
  ours=$("$cli" inspect "$m.gguf" --json | venv/bin/python -c '
import json, sys
e = json.load(sys.stdin)["estimate"]
print(next(k["bytes"] for k in e["kv_cache"] if k["context"] == 8192 and k["type"] == "f16") / 2**30)')
  # modelinfo-cli prints binary units as "MB"/"GB".
  theirs=$(venv/bin/modelinfo "$m.gguf" --context 8192 2>&1 | sed -n 's/.*KV Cache: *\([0-9.]*\) \([MG]\)B.*/\1 \2/p' |
    awk '{ printf "%.3f", $2 == "M" ? $1 / 1024 : $1 }')
  printf '%-12s f16 KV cache at 8192: ours %.3f GiB, modelinfo-cli %s GiB\n' "$m" "$ours" "$theirs"
done
