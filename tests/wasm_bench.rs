//! Decode benchmark in the browser: MB/s of encoded input and values/s, decode alone and decode
//! with histogram, per type, in headless Chromium. Run with `bash scripts/bench-wasm.sh`
//! (prints the numbers; never asserted).
#![cfg(target_arch = "wasm32")]

use tensorscope::engine::decode::{ggml, BlockCodec};
use tensorscope::engine::gguf::GgmlType;
use tensorscope::engine::histogram::Histogram;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

#[path = "bench/input.rs"]
mod input;

wasm_bindgen_test_configure!(run_in_browser);

const INPUT_BYTES: usize = 16 << 20;
const BATCH_ELEMS: usize = 1 << 14;

fn now_ms() -> f64 {
    js_sys::Date::now()
}

fn run(name: &str, codec: BlockCodec) {
    let data = input::blocks(&codec, INPUT_BYTES);
    let batch_bytes = (BATCH_ELEMS / codec.block_elems).max(1) * codec.block_bytes;
    let mut values = vec![0f32; batch_bytes / codec.block_bytes * codec.block_elems];
    let total = (data.len() / codec.block_bytes * codec.block_elems) as f64;
    let (mut dec, mut both) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let t = now_ms();
        for chunk in data.chunks(batch_bytes) {
            let n = chunk.len() / codec.block_bytes * codec.block_elems;
            (codec.decode)(chunk, &mut values[..n]);
        }
        std::hint::black_box(&values);
        dec = dec.min(now_ms() - t);
        let mut h = Histogram::default();
        let t = now_ms();
        for chunk in data.chunks(batch_bytes) {
            let n = chunk.len() / codec.block_bytes * codec.block_elems;
            (codec.decode)(chunk, &mut values[..n]);
            h.add(&values[..n]);
        }
        std::hint::black_box(h.bins(64));
        both = both.min(now_ms() - t);
    }
    let mb = data.len() as f64 / 1e6;
    console_log!(
        "wasm {name:<8} decode {:>6.0} MB/s {:>6.0} Mval/s   decode+hist {:>6.0} MB/s {:>6.0} Mval/s",
        mb / dec * 1e3,
        total / dec / 1e3,
        mb / both * 1e3,
        total / both / 1e3
    );
}

#[wasm_bindgen_test]
fn decode_throughput() {
    for name in ["F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS", "MXFP4"] {
        let t = GgmlType::from_name(name).unwrap();
        run(name, ggml::codec(t).unwrap());
    }
}
