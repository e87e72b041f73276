#!/usr/bin/env python3
"""Write the viewer's built-in samples in www/samples/: small checkpoints with a real model's
structure, so the page opens on something that looks like what users load.

  * tensorscope-sample-16L-Q4_K_M.gguf: a llama-architecture model of 16 layers (embedding
    256, 4 heads, 1 KV head, FFN 256, vocabulary 512) in llama.cpp's Q4_K_M mix (Q4_K, with
    Q6_K for attn_v, for ffn_down in the first, last and every third layer, and for the
    output), F32 norms, a SentencePiece-style tokenizer with special tokens, merges and a chat
    template; named by the GGUF naming convention and labelled a sample in general.name;
  * tensorscope-sample-st/: the same structure (24 layers, embedding 64) in BF16 with Hugging
    Face names, as two safetensors shards, model.safetensors.index.json and config.json.

Weights are random (normal, scaled like trained weights), so histograms look like real ones;
nothing here is a real model. Q4_K and Q6_K are packed here to ggml's block layouts (gguf-py
quantizes no K-quant) and checked against gguf-py's dequantizer. Deterministic.

    .venv-fixtures/bin/python scripts/make_samples.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter, TokenType
from gguf.quants import dequantize
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from make_diff_fixtures import quantize_q4_k  # noqa: E402

OUT = ROOT / "www" / "samples"
GGUF_NAME = "tensorscope-sample-16L-Q4_K_M.gguf"
LAYERS, EMBD, HEADS, KV_HEADS, FFN, VOCAB = 16, 256, 4, 1, 256, 512
HEAD_DIM = EMBD // HEADS


def quantize_q6_k(x: np.ndarray) -> np.ndarray:
    """ggml's block_q6_K: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 sub-block
    scales and an f16 d per 256 elements; each value is d * scale[j] * (q - 32)."""
    blocks = x.astype(np.float32).reshape(-1, 16, 16)
    amax = np.abs(blocks).max(axis=2)
    sub = amax / 31
    d = sub.max(axis=1, keepdims=True) / 127
    d16 = d.astype(np.float16)
    d = d16.astype(np.float32)
    sc = np.clip(np.rint(np.divide(sub, d, out=np.zeros_like(sub), where=d > 0)), -128, 127).astype(np.int8)
    step = (d * sc.astype(np.float32))[:, :, None]
    q = np.rint(np.divide(blocks, step, out=np.zeros_like(blocks), where=step > 0))
    q = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(-1, 2, 4, 32)  # halves of 128, 4 groups of 32
    lo, hi = q & 0x0F, q >> 4
    ql = (lo[:, :, 0:2, :] | (lo[:, :, 2:4, :] << 4)).reshape(-1, 128)
    qh = (hi[:, :, 0] | (hi[:, :, 1] << 2) | (hi[:, :, 2] << 4) | (hi[:, :, 3] << 6)).reshape(-1, 64)
    raw = np.concatenate([ql, qh, sc.view(np.uint8), d16.view(np.uint8)], axis=1)
    return raw.reshape(*x.shape[:-1], x.shape[-1] // 256 * 210)


def weight(rng, rows, cols, scale=None):
    s = scale if scale is not None else 1.0 / np.sqrt(cols)
    w = rng.standard_normal((rows, cols)).astype(np.float32) * s
    # A few outliers, as trained weights have.
    idx = rng.integers(0, w.size, size=max(1, w.size // 2000))
    w.reshape(-1)[idx] *= 8
    return w


def tokens():
    toks = [("<unk>", TokenType.UNKNOWN), ("<s>", TokenType.CONTROL), ("</s>", TokenType.CONTROL),
            ("<|user|>", TokenType.CONTROL), ("<|assistant|>", TokenType.CONTROL), ("<|system|>", TokenType.CONTROL),
            ("<|end|>", TokenType.CONTROL)]
    toks += [(f"<0x{b:02X}>", TokenType.BYTE) for b in range(256)]
    words = ["▁the", "▁of", "▁and", "▁to", "▁a", "▁in", "▁is", "▁that", "▁for", "▁it", "▁with", "▁as", "▁was",
             "▁on", "▁be", "▁at", "▁by", "▁this", "▁had", "▁not", "▁are", "▁but", "▁from", "▁or", "▁have", "▁an",
             "▁they", "▁which", "▁one", "▁you", "▁were", "▁her", "▁all", "▁she", "▁there", "▁would", "▁their",
             "▁we", "▁him", "▁been", "▁has", "▁when", "▁who", "▁will", "▁more", "▁no", "▁if", "▁out", "▁so",
             "▁said", "▁what", "▁up", "▁its", "▁about", "▁into", "▁than", "▁them", "▁can", "▁only", "▁other",
             "▁new", "▁some", "▁could", "▁time", "▁these", "▁two", "▁may", "▁then", "▁do", "▁first", "▁any",
             "▁my", "▁now", "▁such", "▁like", "▁our", "▁over", "▁man", "▁me", "▁even", "▁most", "▁made",
             "▁Hello", "▁world", "▁model", "▁tensor", "▁weights", "e", "t", "a", "o", "i", "n", "s", "r", "h",
             "l", "d", "c", "u", "m", "f", "p", "g", "w", "y", "b", ",", ".", "▁", "ing", "ed", "er", "es"]
    toks += [(w, TokenType.NORMAL) for w in words]
    while len(toks) < VOCAB - 1:
        toks.append((f"▁tok{len(toks)}", TokenType.NORMAL))
    toks.append(("<|placeholder|>", TokenType.UNUSED))
    return toks


TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ '<|system|>\n' + message['content'] + '<|end|>\n' }}"
    "{% elif message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '<|end|>\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


def add_checked(writer, name, data, qtype):
    """Quantize `data` to `qtype`, check the packing against gguf-py's dequantizer, add it."""
    if qtype == Q.F32:
        writer.add_tensor(name, data.astype(np.float32))
        return
    raw = quantize_q4_k(data) if qtype == Q.Q4_K else quantize_q6_k(data)
    back = dequantize(raw, qtype).reshape(data.shape)
    nmse = float(((back - data) ** 2).sum() / (data ** 2).sum())
    assert nmse < 0.03, f"{name}: {qtype.name} packing is off (NMSE {nmse})"
    writer.add_tensor(name, raw, raw_dtype=qtype)


def write_gguf(rng):
    w = GGUFWriter(str(OUT / GGUF_NAME), "llama")
    w.add_type("model")
    w.add_name("Tensorscope Sample (random weights)")
    w.add_basename("tensorscope-sample")
    w.add_size_label("16L")
    w.add_description("A built-in sample: a real model's structure with random weights. Not a model.")
    w.add_license("mit")
    w.add_context_length(4096)
    w.add_embedding_length(EMBD)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_file_type(15)  # MOSTLY_Q4_K_M
    w.add_quantization_version(2)
    toks = tokens()
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list([t for t, _ in toks])
    w.add_token_types([int(ty) for _, ty in toks])
    w.add_token_scores([0.0 if ty != TokenType.NORMAL else -float(i) / 10 for i, (_, ty) in enumerate(toks)])
    w.add_token_merges(["▁ t", "▁t he", "▁ a", "i n", "e r", "▁ H", "▁H ello", "▁ w", "▁w orld"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_eot_token_id(6)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_chat_template(TEMPLATE)
    add_checked(w, "token_embd.weight", weight(rng, VOCAB, EMBD, 0.02), Q.Q4_K)
    for i in range(LAYERS):
        more_bits = i < LAYERS // 8 or i >= 7 * LAYERS // 8 or (i - LAYERS // 8) % 3 == 2
        b = f"blk.{i}"
        add_checked(w, f"{b}.attn_norm.weight", 1 + 0.1 * rng.standard_normal(EMBD), Q.F32)
        add_checked(w, f"{b}.attn_q.weight", weight(rng, EMBD, EMBD), Q.Q4_K)
        add_checked(w, f"{b}.attn_k.weight", weight(rng, KV_HEADS * HEAD_DIM, EMBD), Q.Q4_K)
        add_checked(w, f"{b}.attn_v.weight", weight(rng, KV_HEADS * HEAD_DIM, EMBD), Q.Q6_K)
        add_checked(w, f"{b}.attn_output.weight", weight(rng, EMBD, EMBD), Q.Q4_K)
        add_checked(w, f"{b}.ffn_norm.weight", 1 + 0.1 * rng.standard_normal(EMBD), Q.F32)
        add_checked(w, f"{b}.ffn_gate.weight", weight(rng, FFN, EMBD), Q.Q4_K)
        add_checked(w, f"{b}.ffn_up.weight", weight(rng, FFN, EMBD), Q.Q4_K)
        add_checked(w, f"{b}.ffn_down.weight", weight(rng, EMBD, FFN), Q.Q6_K if more_bits else Q.Q4_K)
    add_checked(w, "output_norm.weight", 1 + 0.1 * rng.standard_normal(EMBD), Q.F32)
    add_checked(w, "output.weight", weight(rng, VOCAB, EMBD, 0.02), Q.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_safetensors(rng):
    layers, embd, heads, kv, ffn, vocab = 24, 64, 4, 2, 128, 256
    hd = embd // heads
    bf16 = lambda a: a.astype(ml_dtypes.bfloat16)  # noqa: E731
    names = {"model.embed_tokens.weight": weight(rng, vocab, embd, 0.02)}
    for i in range(layers):
        p = f"model.layers.{i}"
        names[f"{p}.input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(embd).astype(np.float32)
        names[f"{p}.self_attn.q_proj.weight"] = weight(rng, heads * hd, embd)
        names[f"{p}.self_attn.k_proj.weight"] = weight(rng, kv * hd, embd)
        names[f"{p}.self_attn.v_proj.weight"] = weight(rng, kv * hd, embd)
        names[f"{p}.self_attn.o_proj.weight"] = weight(rng, embd, heads * hd)
        names[f"{p}.post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(embd).astype(np.float32)
        names[f"{p}.mlp.gate_proj.weight"] = weight(rng, ffn, embd)
        names[f"{p}.mlp.up_proj.weight"] = weight(rng, ffn, embd)
        names[f"{p}.mlp.down_proj.weight"] = weight(rng, embd, ffn)
    names["model.norm.weight"] = 1 + 0.1 * rng.standard_normal(embd).astype(np.float32)
    names["lm_head.weight"] = weight(rng, vocab, embd, 0.02)
    tensors = {k: bf16(v) for k, v in names.items()}
    folder = OUT / "tensorscope-sample-st"
    folder.mkdir(exist_ok=True)
    keys = list(tensors)
    half = len(keys) // 2
    shards = [keys[:half], keys[half:]]
    weight_map, total = {}, 0
    for n, part in enumerate(shards, 1):
        fname = f"model-{n:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: tensors[k] for k in part}, str(folder / fname), metadata={"format": "pt"})
        for k in part:
            weight_map[k] = fname
            total += tensors[k].nbytes
    params = sum(t.size for t in tensors.values())
    index = {"metadata": {"total_size": total, "total_parameters": params}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": embd,
              "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "max_position_embeddings": 8192, "vocab_size": vocab,
              "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5, "rope_theta": 500000.0}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def main():
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(2026)
    write_gguf(rng)
    write_safetensors(rng)


if __name__ == "__main__":
    main()
