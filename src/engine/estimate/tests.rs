//! Estimates against llama.cpp's sizing rules, computed by hand for each layout.

use serde_json::json;

use super::*;
use crate::gguf::{Array, Value, ValueType};
use crate::model::MetaValue;
use crate::range::ByteRange;

const GIB: u64 = 1 << 30;

fn gguf(arch: &str, keys: &[(&str, Value)]) -> Checkpoint {
    let mut cp = Checkpoint::empty(Format::Gguf);
    cp.metadata.push(("general.architecture".into(), MetaValue::Gguf(Value::String(arch.into()))));
    for (k, v) in keys {
        cp.metadata.push((format!("{arch}.{k}"), MetaValue::Gguf(v.clone())));
    }
    cp
}

fn array(item_type: ValueType, items: Vec<Value>) -> Value {
    Value::Array(Box::new(Array {
        item_type,
        len: items.len() as u64,
        items,
        tail: Vec::new(),
        span: ByteRange::new(0, 0),
    }))
}

fn u32s(v: &[u32]) -> Value {
    array(ValueType::U32, v.iter().map(|&x| Value::U32(x)).collect())
}

fn kv(e: &Estimate, context: u64, cache: CacheType) -> u64 {
    e.kv_cache.iter().find(|k| k.context == context && k.cache == cache).unwrap_or_else(|| panic!("{e:?}")).bytes
}

fn llama3_8b() -> Checkpoint {
    use Value::U32;
    gguf(
        "llama",
        &[
            ("block_count", U32(32)),
            ("context_length", U32(8192)),
            ("embedding_length", U32(4096)),
            ("attention.head_count", U32(32)),
            ("attention.head_count_kv", U32(8)),
        ],
    )
}

#[test]
fn grouped_query_attention_llama3_8b() {
    let e = estimate(&llama3_8b());
    assert_eq!(e.source, Some(Source::Gguf));
    assert_eq!(e.context, Some(8192));
    // The published figure: 1 GiB of f16 cache at 8k (32 layers × 2 × 8 heads × 128 × 2 B per token).
    assert_eq!(kv(&e, 8192, CacheType::F16), GIB);
    assert_eq!(kv(&e, 32768, CacheType::F16), 4 * GIB);
    // q8_0: 34 bytes per 32 elements; q4_0: 18.
    assert_eq!(kv(&e, 8192, CacheType::Q8_0), 32 * 2 * (1024 / 32 * 34) * 8192);
    assert_eq!(kv(&e, 4096, CacheType::Q4_0), 32 * 2 * (1024 / 32 * 18) * 4096);
    let contexts: Vec<u64> = e.kv_cache.iter().filter(|k| k.cache == CacheType::F16).map(|k| k.context).collect();
    assert_eq!(contexts, [4096, 8192, 32768], "the model's own context once, with the defaults");
    assert_eq!(e.state_bytes, 0);
    assert!(e.unknown.is_empty(), "{:?}", e.unknown);
}

#[test]
fn separate_key_and_value_lengths_and_odd_contexts() {
    use Value::U32;
    let cp = gguf(
        "qwen3",
        &[
            ("block_count", U32(2)),
            ("context_length", U32(1000)),
            ("embedding_length", U32(512)),
            ("attention.head_count", U32(4)),
            ("attention.head_count_kv", U32(2)),
            ("attention.key_length", U32(192)),
            ("attention.value_length", U32(64)),
        ],
    );
    let e = estimate(&cp);
    // 1000 is padded to 1024 cells; K 2×192, V 2×64 elements per token.
    assert_eq!(kv(&e, 1000, CacheType::F16), 2 * (2 * 192 + 2 * 64) * 2 * 1024);
}

#[test]
fn sliding_windows_gemma2_and_gemma3() {
    use Value::U32;
    // Gemma 2 9B: 42 layers, 8 KV heads of 256; even layers slide over 4096 tokens.
    let cp = gguf(
        "gemma2",
        &[
            ("block_count", U32(42)),
            ("context_length", U32(8192)),
            ("embedding_length", U32(3584)),
            ("attention.head_count", U32(16)),
            ("attention.head_count_kv", U32(8)),
            ("attention.key_length", U32(256)),
            ("attention.value_length", U32(256)),
            ("attention.sliding_window", U32(4096)),
        ],
    );
    let e = estimate(&cp);
    let per_token = 2 * 8 * 256 * 2;
    // Full layers: 8192 cells; sliding ones: the window plus a 512 micro-batch, padded to 256.
    assert_eq!(kv(&e, 8192, CacheType::F16), 21 * per_token * 8192 + 21 * per_token * 4608);
    assert_eq!(kv(&e, 4096, CacheType::F16), 42 * per_token * 4096, "a window past the context changes nothing");
    // Gemma 3: five of six layers slide over 1024 tokens.
    let cp = gguf(
        "gemma3",
        &[
            ("block_count", U32(12)),
            ("context_length", U32(131072)),
            ("embedding_length", U32(1024)),
            ("attention.head_count", U32(4)),
            ("attention.head_count_kv", U32(1)),
            ("attention.key_length", U32(256)),
            ("attention.value_length", U32(256)),
            ("attention.sliding_window", U32(1024)),
        ],
    );
    let e = estimate(&cp);
    let per_token = 2 * 256 * 2;
    assert_eq!(kv(&e, 131072, CacheType::F16), 2 * per_token * 131072 + 10 * per_token * 1536);
}

#[test]
fn chunked_and_sliding_gpt_oss_and_llama4() {
    use Value::U32;
    let cp = gguf(
        "gpt-oss",
        &[
            ("block_count", U32(24)),
            ("context_length", U32(131072)),
            ("embedding_length", U32(2880)),
            ("attention.head_count", U32(64)),
            ("attention.head_count_kv", U32(8)),
            ("attention.key_length", U32(64)),
            ("attention.value_length", U32(64)),
            ("attention.sliding_window", U32(128)),
        ],
    );
    let per_token = 2 * 8 * 64 * 2;
    assert_eq!(kv(&estimate(&cp), 4096, CacheType::F16), 12 * per_token * 4096 + 12 * per_token * 768);
    // Llama 4: three of four layers attend in chunks of 8192 (llama.cpp's fixed size).
    let cp = gguf(
        "llama4",
        &[
            ("block_count", U32(8)),
            ("embedding_length", U32(1024)),
            ("attention.head_count", U32(8)),
            ("attention.head_count_kv", U32(2)),
        ],
    );
    let per_token = 2 * 2 * 128 * 2;
    assert_eq!(kv(&estimate(&cp), 32768, CacheType::F16), 2 * per_token * 32768 + 6 * per_token * 8704);
}

#[test]
fn mla_deepseek2_caches_the_latent_and_no_values() {
    use Value::U32;
    // DeepSeek-V2-Lite as the current converter writes it: one head of 512 + 64, no V.
    let cp = gguf(
        "deepseek2",
        &[
            ("block_count", U32(27)),
            ("context_length", U32(163840)),
            ("embedding_length", U32(2048)),
            ("attention.head_count", U32(16)),
            ("attention.head_count_kv", U32(1)),
            ("attention.key_length", U32(576)),
            ("attention.value_length", U32(512)),
            ("attention.key_length_mla", U32(192)),
            ("attention.value_length_mla", U32(128)),
            ("attention.kv_lora_rank", U32(512)),
        ],
    );
    let e = estimate(&cp);
    assert_eq!(kv(&e, 4096, CacheType::F16), 27 * 576 * 2 * 4096);
    assert_eq!(kv(&e, 4096, CacheType::Q8_0), 27 * (576 / 32 * 34) * 4096);
    // From config.json, the same layout.
    let config = json!({"model_type": "deepseek_v2", "num_hidden_layers": 27, "hidden_size": 2048,
        "num_attention_heads": 16, "num_key_value_heads": 16, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "max_position_embeddings": 163840});
    let f = from_config(&config).unwrap();
    assert_eq!(kv_bytes(&f, 4096, CacheType::F16), Some(27 * 576 * 2 * 4096));
}

#[test]
fn recurrent_state_mamba_and_rwkv() {
    use Value::U32;
    // mamba-130m: 24 layers of d_inner 1536, d_state 16, d_conv 4; f32 state, no KV.
    let cp = gguf(
        "mamba",
        &[
            ("block_count", U32(24)),
            ("context_length", U32(1048576)),
            ("embedding_length", U32(768)),
            ("ssm.conv_kernel", U32(4)),
            ("ssm.inner_size", U32(1536)),
            ("ssm.state_size", U32(16)),
            ("ssm.time_step_rank", U32(48)),
        ],
    );
    let e = estimate(&cp);
    assert_eq!(e.state_bytes, 24 * (3 * 1536 + 16 * 1536) * 4);
    assert!(e.kv_cache.is_empty(), "{:?}", e.kv_cache);
    assert!(e.unknown.is_empty(), "{:?}", e.unknown);
    let config = json!({"model_type": "mamba", "num_hidden_layers": 24, "hidden_size": 768,
        "intermediate_size": 1536, "state_size": 16, "conv_kernel": 4});
    let f = from_config(&config).unwrap();
    assert_eq!(f.layers.iter().map(|l| l.state * 4).sum::<u64>(), e.state_bytes);
    // RWKV6 1.6B: token shift 2 × n_embd and n_embd × head size per layer.
    let cp = gguf("rwkv6", &[("block_count", U32(24)), ("embedding_length", U32(2048)), ("wkv.head_size", U32(64))]);
    assert_eq!(estimate(&cp).state_bytes, 24 * (2 * 2048 + 2048 * 64) * 4);
}

#[test]
fn hybrids_cache_only_their_attention_layers() {
    use Value::U32;
    // Jamba-style: head_count_kv 0 marks the recurrent layers; layer 4 of 8 attends.
    let mut kv_heads = vec![0; 8];
    kv_heads[4] = 8;
    let cp = gguf(
        "jamba",
        &[
            ("block_count", U32(8)),
            ("context_length", U32(262144)),
            ("embedding_length", U32(4096)),
            ("attention.head_count", U32(32)),
            ("attention.head_count_kv", u32s(&kv_heads)),
            ("ssm.conv_kernel", U32(4)),
            ("ssm.inner_size", U32(8192)),
            ("ssm.state_size", U32(16)),
        ],
    );
    let e = estimate(&cp);
    assert_eq!(kv(&e, 4096, CacheType::F16), 2 * 8 * 128 * 2 * 4096);
    assert_eq!(e.state_bytes, 7 * (3 * 8192 + 16 * 8192) * 4);
    // Qwen3-Next: one full-attention layer in four, the others gated delta nets.
    let cp = gguf(
        "qwen3next",
        &[
            ("block_count", U32(8)),
            ("embedding_length", U32(2048)),
            ("attention.head_count", U32(16)),
            ("attention.head_count_kv", U32(2)),
            ("attention.key_length", U32(256)),
            ("attention.value_length", U32(256)),
            ("full_attention_interval", U32(4)),
            ("ssm.conv_kernel", U32(4)),
            ("ssm.inner_size", U32(4096)),
            ("ssm.state_size", U32(128)),
            ("ssm.group_count", U32(16)),
        ],
    );
    let e = estimate(&cp);
    assert_eq!(kv(&e, 4096, CacheType::F16), 2 * (2 * 2 * 256 * 2) * 4096, "layers 3 and 7 attend");
    assert_eq!(e.state_bytes, 6 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096) * 4);
}

#[test]
fn config_json_gives_the_same_answer_as_the_gguf() {
    let config = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16"});
    let mut cp = Checkpoint::empty(Format::Safetensors);
    cp.configs.push(crate::config::ConfigFile { path: "m/config.json".into(), json: config });
    let e = estimate(&cp);
    assert_eq!(e.source, Some(Source::Config));
    assert_eq!(e.architecture.as_deref(), Some("llama"));
    assert_eq!(e.kv_cache, estimate(&llama3_8b()).kv_cache);
    // Gemma 3 through layer_types, nested in a multimodal config.
    let types: Vec<&str> = (0..12).map(|i| if i % 6 == 5 { "full_attention" } else { "sliding_attention" }).collect();
    let config = json!({"model_type": "gemma3", "text_config": {"num_hidden_layers": 12, "hidden_size": 1024,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 1024,
        "layer_types": types, "max_position_embeddings": 131072}});
    let f = from_config(&config).unwrap();
    assert_eq!(kv_bytes(&f, 131072, CacheType::F16), Some(2 * 1024 * 131072 + 10 * 1024 * 1536));
    // Nemotron-H: Mamba-2 ('M'), attention ('*') and feed-forward ('-') layers, as its converter
    // writes them into the GGUF (per-layer KV heads and feed-forward widths, ssm.* keys).
    let pattern = "M-M*-M-*";
    let config = json!({"model_type": "nemotron_h", "num_hidden_layers": 8, "hidden_size": 4480,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "mamba_num_heads": 128,
        "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
        "max_position_embeddings": 131072, "hybrid_override_pattern": pattern});
    let mut hf = Checkpoint::empty(Format::Safetensors);
    hf.configs.push(crate::config::ConfigFile { path: "config.json".into(), json: config });
    let per_layer = |at: char, n: u32| u32s(&pattern.chars().map(|c| if c == at { n } else { 0 }).collect::<Vec<_>>());
    let from_gguf = gguf(
        "nemotron_h",
        &[
            ("block_count", Value::U32(8)),
            ("context_length", Value::U32(131072)),
            ("embedding_length", Value::U32(4480)),
            ("attention.head_count", Value::U32(40)),
            ("attention.head_count_kv", per_layer('*', 8)),
            ("attention.key_length", Value::U32(128)),
            ("attention.value_length", Value::U32(128)),
            ("feed_forward_length", per_layer('-', 15680)),
            ("ssm.conv_kernel", Value::U32(4)),
            ("ssm.state_size", Value::U32(128)),
            ("ssm.group_count", Value::U32(8)),
            ("ssm.inner_size", Value::U32(10240)),
        ],
    );
    let (hf, from_gguf) = (estimate(&hf), estimate(&from_gguf));
    assert_eq!((hf.kv_layers, hf.unknown.len()), (2, 0), "{hf:?}");
    assert_eq!((&hf.kv_cache, hf.state_bytes), (&from_gguf.kv_cache, from_gguf.state_bytes));
    assert_eq!(from_gguf.state_bytes, 3 * 4 * (3 * (10240 + 2 * 8 * 128) + 128 * 10240));
    // Qwen3.5: Gated DeltaNet layers and one full-attention layer in four, its text config
    // nested, as the converter writes it (state: the linear heads' convolution and state).
    let config = json!({"model_type": "qwen3_5", "text_config": {"model_type": "qwen3_5_text",
        "num_hidden_layers": 8, "hidden_size": 2560, "num_attention_heads": 16, "num_key_value_heads": 4,
        "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_value_head_dim": 128, "linear_num_value_heads": 32, "full_attention_interval": 4}});
    let f = from_config(&config).unwrap();
    assert_eq!(f.layers.iter().filter(|l| l.kv_heads > 0).count(), 2, "{f:?}");
    let state = 3 * (32 * 128 + 2 * 16 * 128) + 128 * 32 * 128;
    assert_eq!(f.layers.iter().map(|l| l.state).collect::<Vec<_>>(), [state, state, state, 0, state, state, state, 0]);
    // Granite 4.0-H: Mamba-2 and attention layers by layer_types, the state from its mamba_* keys.
    let types = ["mamba", "mamba", "attention", "mamba"];
    let config = json!({"model_type": "granitemoehybrid", "num_hidden_layers": 4, "hidden_size": 1536,
        "num_attention_heads": 12, "num_key_value_heads": 4, "layer_types": types, "mamba_d_state": 128,
        "mamba_d_conv": 4, "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 48, "mamba_d_head": 64});
    let f = from_config(&config).unwrap();
    let state = 3 * (2 * 1536 + 2 * 128) + 128 * 2 * 1536;
    assert_eq!(
        f.layers.iter().map(|l| (l.kv_heads, l.state)).collect::<Vec<_>>(),
        [(0, state), (0, state), (4, 0), (0, state)]
    );
    assert!(f.unknown.is_empty(), "{:?}", f.unknown);
    // DeepSeek V3.2: MLA and its lightning indexer's keys on every layer, as in the GGUF.
    let config = json!({"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32",
        "num_hidden_layers": 4, "hidden_size": 7168, "num_attention_heads": 128, "kv_lora_rank": 512,
        "qk_rope_head_dim": 64, "index_head_dim": 128, "index_n_heads": 64, "max_position_embeddings": 163840});
    let mut hf = Checkpoint::empty(Format::Safetensors);
    hf.configs.push(crate::config::ConfigFile { path: "config.json".into(), json: config });
    let from_gguf = gguf(
        "deepseek32",
        &[
            ("block_count", Value::U32(4)),
            ("context_length", Value::U32(163840)),
            ("embedding_length", Value::U32(7168)),
            ("attention.head_count", Value::U32(128)),
            ("attention.head_count_kv", Value::U32(1)),
            ("attention.key_length", Value::U32(576)),
            ("attention.value_length", Value::U32(512)),
            ("attention.key_length_mla", Value::U32(192)),
            ("attention.value_length_mla", Value::U32(128)),
            ("attention.indexer.key_length", Value::U32(128)),
        ],
    );
    let (hf, from_gguf) = (estimate(&hf), estimate(&from_gguf));
    assert_eq!(hf.kv_cache, from_gguf.kv_cache);
    assert_eq!(kv(&hf, 4096, CacheType::F16), 4 * 4096 * (576 + 128) * 2);
    // GLM-5.2 without indexer types: llama.cpp's table, the first two layers and one in four.
    let glm = |context: u32| {
        let e = estimate(&gguf(
            "glm-dsa",
            &[
                ("block_count", Value::U32(10)),
                ("context_length", Value::U32(context)),
                ("attention.head_count", Value::U32(64)),
                ("attention.head_count_kv", Value::U32(1)),
                ("attention.key_length", Value::U32(576)),
                ("attention.value_length", Value::U32(512)),
                ("attention.key_length_mla", Value::U32(256)),
                ("attention.value_length_mla", Value::U32(256)),
                ("attention.indexer.key_length", Value::U32(128)),
            ],
        ));
        (kv(&e, 4096, CacheType::F16) / (4096 * 2) - 10 * 576) / 128
    };
    assert_eq!((glm(202752), glm(1 << 20)), (10, 4), "GLM-5 and 5.1 on every layer, 5.2 on 0, 1, 2 and 6");
    // A window with no pattern is not guessed: said, and counted in full.
    let config = json!({"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 256,
        "num_attention_heads": 4, "sliding_window": 4096});
    let f = from_config(&config).unwrap();
    assert!(f.unknown[0].contains("no layer pattern"), "{:?}", f.unknown);
    assert!(f.layers.iter().all(|l| l.window.is_none()));
}

/// Encoders and diffusion models keep no KV cache (llama.cpp makes none for them): the estimate
/// is their weights, whatever the context, from a GGUF or a config.json alike.
#[test]
fn encoders_and_diffusion_models_keep_no_cache() {
    use Value::U32;
    let keys = [
        ("block_count", U32(6)),
        ("context_length", U32(512)),
        ("embedding_length", U32(384)),
        ("attention.head_count", U32(12)),
    ];
    for arch in ["bert", "nomic-bert", "modern-bert", "gemma-embedding", "llada"] {
        let e = estimate(&gguf(arch, &keys));
        assert_eq!((e.layers, e.kv_layers, e.context), (6, 0, Some(512)), "{arch}");
        assert_eq!((e.kv_cache.len(), e.unknown.len()), (0, 0), "{arch}: {e:?}");
    }
    // all-MiniLM-L6-v2's config.json (sentence-transformers), and an MPNet one.
    let minilm = json!({"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 384,
        "num_hidden_layers": 6, "num_attention_heads": 12, "max_position_embeddings": 512});
    let mpnet = json!({"architectures": ["MPNetModel"], "model_type": "mpnet", "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "max_position_embeddings": 514});
    // EmbeddingGemma is Gemma 3's text model; Gemma 3's language model caches.
    let embedding_gemma = json!({"architectures": ["Gemma3TextModel"], "model_type": "gemma3_text",
        "hidden_size": 768, "num_hidden_layers": 24, "num_attention_heads": 3, "num_key_value_heads": 1,
        "head_dim": 256, "sliding_window": 512});
    for (config, layers) in [(minilm, 6), (mpnet, 12), (embedding_gemma.clone(), 24)] {
        let mut cp = Checkpoint::empty(Format::Safetensors);
        cp.configs.push(crate::config::ConfigFile { path: "m/config.json".into(), json: config });
        let e = estimate(&cp);
        assert_eq!((e.source, e.layers, e.kv_layers), (Some(Source::Config), layers, 0), "{e:?}");
        assert_eq!((e.kv_cache.len(), e.unknown.len()), (0, 0), "{e:?}");
    }
    // roberta-base's head is not one the converter takes; a BERT configured as a decoder caches.
    let roberta = json!({"architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "max_position_embeddings": 514});
    assert!(from_config(&roberta).unwrap().layers.iter().all(|l| l.kv_heads == 0));
    let bert_decoder = json!({"architectures": ["BertLMHeadModel"], "model_type": "bert", "is_decoder": true,
        "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12});
    assert!(from_config(&bert_decoder).unwrap().layers.iter().all(|l| l.kv_heads == 12));
    let mut gemma3 = embedding_gemma;
    gemma3["architectures"] = json!(["Gemma3ForCausalLM"]);
    assert_eq!(from_config(&gemma3).unwrap().layers.iter().filter(|l| l.kv_heads > 0).count(), 24);
    // A decoder of the same sizes caches.
    assert_eq!(estimate(&gguf("llama", &keys)).kv_layers, 6);
}

#[test]
fn the_total_at_a_context_is_the_weights_alone_only_for_a_model_known_to_keep_no_cache() {
    use Value::U32;
    let keys = [
        ("block_count", U32(6)),
        ("context_length", U32(512)),
        ("embedding_length", U32(384)),
        ("attention.head_count", U32(12)),
    ];
    let mut bert = gguf("bert", &keys);
    bert.tensors.push(tensor("token_embd.weight", &[384, 1000]));
    let e = estimate(&bert);
    assert_eq!(e.weights_bytes, 384 * 1000 * 4);
    for context in [1, 4096, 1 << 20] {
        assert_eq!(e.total_at(context, CacheType::Q8_0), Some(e.weights_bytes), "{context}");
    }
    // Recurrent: its state, at any context.
    let mamba = gguf(
        "mamba",
        &[
            ("block_count", U32(2)),
            ("embedding_length", U32(32)),
            ("ssm.conv_kernel", U32(4)),
            ("ssm.inner_size", U32(64)),
            ("ssm.state_size", U32(16)),
        ],
    );
    let e = estimate(&mamba);
    assert!(e.state_bytes > 0);
    assert_eq!(e.total_at(12345, CacheType::F16), Some(e.weights_bytes + e.state_bytes));
    // A decoder: only where estimated.
    let e = estimate(&gguf("llama", &keys));
    assert_eq!(e.total_at(4096, CacheType::F16), Some(e.weights_bytes + kv(&e, 4096, CacheType::F16)));
    assert_eq!(e.total_at(4095, CacheType::F16), None);
    // No layers known, or nothing read of them: not the weights alone.
    let no_layers = gguf("llama", &[("context_length", U32(512))]);
    assert_eq!(estimate(&no_layers).total_at(4096, CacheType::F16), None);
    let silent = gguf("llama", &[("block_count", U32(2))]);
    assert_eq!(estimate(&silent).total_at(4096, CacheType::F16), None);
    assert_eq!(estimate(&Checkpoint::empty(Format::Safetensors)).total_at(4096, CacheType::F16), None);
}

fn tensor(name: &str, shape: &[u64]) -> crate::model::Tensor {
    crate::model::Tensor {
        name: name.into(),
        dtype: crate::model::Dtype::Safetensors(crate::safetensors::Dtype::F32),
        shape: shape.to_vec(),
        file: 0,
        offset: None,
        nbytes: shape.iter().product::<u64>() * 4,
        data: Err(crate::model::Lost::NoSize),
        strides: None,
    }
}

#[test]
fn learned_positions_gpt2_are_not_run_past_their_table() {
    use Value::U32;
    // GPT-2 as llama.cpp's converter writes it: position_embd.weight is ne [768, 1024].
    let mut cp = gguf(
        "gpt2",
        &[
            ("block_count", U32(12)),
            ("context_length", U32(1024)),
            ("embedding_length", U32(768)),
            ("attention.head_count", U32(12)),
        ],
    );
    cp.tensors.push(tensor("position_embd.weight", &[768, 1024]));
    let e = estimate_at(&cp, &[512, 2048]);
    let contexts = |e: &Estimate| {
        let mut c: Vec<u64> = e.kv_cache.iter().filter(|k| k.cache == CacheType::F16).map(|k| k.context).collect();
        c.dedup();
        c
    };
    assert_eq!(contexts(&e), [512, 1024]);
    assert_eq!(kv(&e, 1024, CacheType::F16), 12 * 2 * 768 * 2 * 1024);
    assert_eq!(
        e.unknown,
        ["no cache at 2048, 4096, 8192, 32768 tokens: its positions are learned (position_embd.weight holds 1024 \
          positions), \
          and it runs at most 1024"]
    );
    assert_eq!((e.total_at(4096, CacheType::F16), e.runs_at_most), (None, Some(1024)));
    // The same model from its config.json and safetensors, whose wpe.weight is [1024, 768].
    let config = json!({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 12, "n_embd": 768,
        "n_head": 12, "n_positions": 1024, "n_ctx": 1024});
    let mut st = Checkpoint::empty(Format::Safetensors);
    st.configs.push(crate::config::ConfigFile { path: "gpt2/config.json".into(), json: config });
    st.tensors.push(tensor("wpe.weight", &[1024, 768]));
    let hf = estimate_at(&st, &[512, 2048]);
    assert_eq!((contexts(&hf), kv(&hf, 1024, CacheType::F16)), ([512, 1024].into(), kv(&e, 1024, CacheType::F16)));
    // OPT's table holds two rows before the first position: with or without its config, it runs
    // 2048. So under BLIP-2's language model.
    let config = json!({"model_type": "opt", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "max_position_embeddings": 2048});
    for (name, config) in [
        ("model.decoder.embed_positions.weight", Some(config.clone())),
        ("language_model.model.decoder.embed_positions.weight", Some(config)),
        ("model.decoder.embed_positions.weight", None),
    ] {
        let mut opt = Checkpoint::empty(Format::Safetensors);
        opt.configs.extend(config.map(|json| crate::config::ConfigFile { path: "config.json".into(), json }));
        opt.tensors.push(tensor(name, &[2050, 64]));
        for i in 0..2 {
            opt.tensors.push(tensor(&format!("model.decoder.layers.{i}.self_attn.k_proj.weight"), &[64, 64]));
            opt.tensors.push(tensor(&format!("model.decoder.layers.{i}.self_attn.v_proj.weight"), &[64, 64]));
        }
        let e = estimate(&opt);
        assert_eq!((contexts(&e), e.runs_at_most), ([2048].into(), Some(2048)), "{name}: {e:?}");
    }
    // GPT-2 under a training wrapper, or as TrOCR's decoder.
    for name in ["model.transformer.wpe.weight", "decoder.transformer.wpe.weight"] {
        let mut cp = st.clone();
        cp.tensors[0].name = name.into();
        assert_eq!(estimate(&cp).runs_at_most, Some(1024), "{name}");
    }
    let mut shapes = Checkpoint::empty(Format::Pickle);
    shapes.tensors.push(tensor("transformer.wpe.weight", &[8192, 64]));
    shapes.tensors.push(tensor("transformer.layers.0.self_attn.k_proj.weight", &[64, 64]));
    shapes.tensors.push(tensor("transformer.layers.0.self_attn.v_proj.weight", &[64, 64]));
    assert_eq!(contexts(&estimate(&shapes)), [4096, 8192]);
    // A vision tower's table, or a model whose positions are rotary, runs at every context.
    for name in [
        "vision_tower.vision_model.embeddings.position_embedding.weight",
        "model.embed_tokens.weight",
        "model.encoder.embed_positions.weight",
        "embed_positions.weight",
    ] {
        let mut cp = st.clone();
        cp.tensors[0].name = name.into();
        assert_eq!(contexts(&estimate(&cp)), [1024, 4096, 8192, 32768], "{name}");
    }
    // An encoder's table changes nothing: it keeps no cache.
    let mut bert =
        gguf("bert", &[("block_count", U32(2)), ("context_length", U32(512)), ("embedding_length", U32(64))]);
    bert.tensors.push(tensor("position_embd.weight", &[64, 512]));
    let e = estimate(&bert);
    assert!(e.unknown.is_empty() && e.total_at(4096, CacheType::F16).is_some(), "{e:?}");
}

#[test]
fn without_metadata_the_attention_weights_say() {
    use crate::model::{Dtype, Lost, Tensor};
    use crate::safetensors::Dtype as St;
    let t = |name: &str, rows: u64| Tensor {
        name: name.into(),
        dtype: Dtype::Safetensors(St::BF16),
        shape: vec![rows, 4096],
        file: 0,
        offset: None,
        nbytes: rows * 4096 * 2,
        data: Err(Lost::NoSize),
        strides: None,
    };
    let mut cp = Checkpoint::empty(Format::Safetensors);
    for i in 0..32 {
        cp.tensors.push(t(&format!("model.layers.{i}.self_attn.k_proj.weight"), 1024));
        cp.tensors.push(t(&format!("model.layers.{i}.self_attn.v_proj.weight"), 1024));
    }
    let e = estimate(&cp);
    assert_eq!(e.source, Some(Source::Shapes));
    assert_eq!(kv(&e, 4096, CacheType::F16), GIB / 2);
    assert_eq!(e.weights_bytes, 64 * 1024 * 4096 * 2);
    assert!(e.unknown[0].contains("no config.json"));
    // Nothing to go on: said so, weights still counted.
    let e = estimate(&Checkpoint::empty(Format::Safetensors));
    assert!(e.kv_cache.is_empty() && e.source.is_none() && !e.unknown.is_empty());
}

#[test]
fn hostile_counts_neither_panic_nor_allocate() {
    use Value::{U32, U64};
    let cp = gguf("llama", &[("block_count", U64(u64::MAX)), ("attention.head_count", U32(8))]);
    assert!(estimate(&cp).unknown[0].contains("block_count"));
    let cp = gguf(
        "llama",
        &[
            ("block_count", U32(4)),
            ("embedding_length", U64(u64::MAX)),
            ("attention.head_count", U32(1)),
            ("attention.head_count_kv", u32s(&[1, 2])),
            ("context_length", U64(u64::MAX)),
        ],
    );
    let e = estimate(&cp);
    assert!(e.unknown.iter().any(|u| u.contains("2 items for 4 layers")), "{:?}", e.unknown);
    assert!(e.kv_cache.iter().any(|k| k.bytes == u64::MAX), "saturates, never wraps");
    let config = json!({"num_hidden_layers": 1e30, "hidden_size": -1});
    assert_eq!(from_config(&config), None);
}

#[test]
fn a_projector_opened_with_its_model_is_counted_beside_the_weights() {
    use crate::model::{Dtype, FileInfo, Lost, Tensor};
    use Value::U32;
    let mut cp = llama3_8b();
    // The projector's file sorts first, so its `general.architecture` ("clip") is the one kept.
    cp.metadata[0].1 = MetaValue::Gguf(Value::String("clip".into()));
    cp.metadata.push(("clip.vision.block_count".into(), MetaValue::Gguf(U32(24))));
    cp.files = vec![FileInfo::new("mmproj-model-f16.gguf", 1000), FileInfo::new("model-Q4_K_M.gguf", 5000)];
    let t = |name: &str, file: usize, nbytes: u64| Tensor {
        name: name.into(),
        dtype: Dtype::Ggml(crate::gguf::GgmlType(0)),
        shape: vec![nbytes / 4],
        file,
        offset: None,
        nbytes,
        data: Err(Lost::NoSize),
        strides: None,
    };
    cp.tensors =
        vec![t("v.blk.0.attn_q.weight", 0, 400), t("mm.0.weight", 0, 200), t("blk.0.attn_q.weight", 1, 4000)].into();
    let e = estimate(&cp);
    assert_eq!((e.weights_bytes, e.projector_bytes), (4000, 600));
    assert_eq!(e.architecture.as_deref(), Some("llama"), "the language model's keys size the cache");
    let kv = e.kv_cache.iter().find(|k| k.context == 8192 && k.cache == CacheType::F16).unwrap();
    assert_eq!(kv.bytes, GIB);
    assert_eq!(e.total(kv), 4600 + GIB);
}
