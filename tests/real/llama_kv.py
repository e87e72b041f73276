#!/usr/bin/env python3
"""The KV cache llama.cpp itself allocates for the real GGUF models of the corpus.

    python3 tests/real/llama_kv.py CACHE_DIR [--manifest PATH] > tests/real/llama_kv.json

Needs llama-cpp-python==0.3.36, built from its sdist (PyPI has no wheel of it):
    python3 -m venv VENV && CMAKE_ARGS="-DGGML_NATIVE=OFF" VENV/bin/pip install llama-cpp-python==0.3.36
(a quarter of an hour on two cores). CI does not run this: the test reads the JSON it wrote.

Each GGUF model of tests/real/manifest.json (format "gguf", with tensors in expected.json:
vocab-only files have no cache) is loaded by llama.cpp on the CPU and given a context of one sequence, as
llama-server and llama-cli run it: micro-batch 512, sliding-window layers caching their window
only (swa_full off, the C API's default being on), flash attention on for a quantized cache (its V
needs it). For each context length and cache type (K and V alike) the output gives the sizes
llama.cpp logs, "llama_kv_cache: size = X MiB", summed (a model with sliding-window layers has
two caches), in MiB with the two decimals it prints (tests/fixtures/llama_archs/make_expected.py
asks llama.cpp the same way).

Output: {id: {"llama_cpp_python": version, "kv": [{"context", "type", "kv_mib", "kv_caches"}]}},
kv_caches counting the caches logged.
"""
import argparse
import ctypes
import json
import os
import sys

import llama_cpp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "llama_archs"))
from make_expected import caches, keep, load  # noqa: E402  (one way to ask llama.cpp, for both corpora)

# Contexts llama.cpp pads to 256 cells (1000, 5000) besides the viewer's defaults.
CONTEXTS = [512, 1000, 4096, 5000, 8192, 32768]
TYPES = {"f16": llama_cpp.GGML_TYPE_F16, "q8_0": llama_cpp.GGML_TYPE_Q8_0, "q4_0": llama_cpp.GGML_TYPE_Q4_0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("--manifest", default=os.path.join(os.path.dirname(__file__), "manifest.json"))
    args = ap.parse_args()
    with open(args.manifest) as f:
        files = json.load(f)["files"]
    with open(os.path.join(os.path.dirname(args.manifest), "expected.json")) as f:
        expected = json.load(f)
    llama_cpp.llama_log_set(keep, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    out = {}
    for entry in files:
        if entry["format"] != "gguf" or not expected[entry["id"]]["tensors"]:
            continue
        path = os.path.join(args.cache, "files", entry["id"], entry["file"])
        model = load(path)
        if not model:
            continue
        kv = []
        for context in CONTEXTS:
            for name, t in TYPES.items():
                got = caches(model, context, t)
                if got is None or got["kv_caches"] == 0:
                    raise RuntimeError(f"{entry['id']}: llama.cpp made no KV cache of {name} at {context}")
                kv.append({"context": context, "type": name, "kv_mib": got["kv_mib"], "kv_caches": got["kv_caches"]})
        llama_cpp.llama_model_free(model)
        out[entry["id"]] = {"llama_cpp_python": llama_cpp.__version__, "kv": kv}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
