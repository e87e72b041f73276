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

async fn run(name: &str, codec: BlockCodec) {
    let data = input::blocks(&codec, INPUT_BYTES);
    let batch_bytes = (BATCH_ELEMS / codec.block_elems).max(1) * codec.block_bytes;
    let mut values = vec![0f32; batch_bytes / codec.block_bytes * codec.block_elems];
    let total = (data.len() / codec.block_bytes * codec.block_elems) as f64;
    let (mut dec, mut both) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        // Between passes the page answers the test runner's polls (it gives up after 20 s).
        tensorscope::io::driver::yield_now().await;
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
async fn decode_throughput() {
    for name in [
        "F16", "BF16", "Q4_0", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "MXFP4", "IQ1_S", "IQ1_M",
        "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "TQ1_0", "TQ2_0",
    ] {
        let t = GgmlType::from_name(name).unwrap();
        run(name, ggml::codec(t).unwrap()).await;
    }
}

/// Opening a safetensors header of 500k tensors (65 MB, the size of the largest MoE headers)
/// through the browser's driver, from a Blob.
#[wasm_bindgen_test]
async fn open_a_500k_tensor_header() {
    use tensorscope::io::entries::Input;
    use tensorscope::io::open::open_inputs;
    use tensorscope::io::Cancel;
    let n = 500_000usize;
    let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    // Tiny tensors, so the file can hold its data: the header is what is measured.
    let bytes = 4u64;
    for i in 0..n {
        let off = i as u64 * bytes;
        json.push_str(&format!(
            ",\"model.layers.{}.mlp.experts.{}.down_proj.weight\":{{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[{off},{}]}}",
            i / 5000,
            i % 5000,
            off + bytes
        ));
    }
    json.push('}');
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(json.as_bytes());
    drop(json);
    let header_mb = file.len() as f64 / 1e6;
    file.resize(file.len() + n * 4, 0);
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(&file[..]));
    drop(file);
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).unwrap();
    let t = now_ms();
    let mut inputs = vec![Input { path: "model.safetensors".into(), blob }];
    let (cp, _) = open_inputs(&mut inputs, &Cancel::new(), |_| {}).await.unwrap();
    console_log!(
        "wasm open {header_mb:.1} MB safetensors header of {} tensors ({} findings): {:.0} ms",
        cp.tensors.len(),
        cp.findings.len(),
        now_ms() - t
    );
}

/// One search keystroke over 500k tensor names: the first letter, then letters that narrow it
/// (each filters the rows the last one kept).
#[wasm_bindgen_test]
fn search_keystrokes_at_500k_tensors() {
    use tensorscope::engine::gguf::GgmlType;
    use tensorscope::engine::model::{Checkpoint, Dtype, Format, Lost, Tensor};
    use tensorscope::engine::view::{filter, narrows, sorted, Column};
    let tensors = (0..500_000u64)
        .map(|i| Tensor {
            name: format!("blk.{}.ffn_up_exps.{}.weight", i / 1000, i % 1000),
            dtype: Dtype::Ggml(GgmlType(12)),
            shape: vec![4096, 14336],
            file: 0,
            offset: None,
            nbytes: 0,
            data: Err(Lost::NoSize),
            strides: None,
        })
        .collect();
    let cp = Checkpoint { tensors, ..Checkpoint::empty(Format::Gguf) };
    let all = sorted(&cp, Column::Index, false);
    let (mut rows, mut last) = (all.clone(), String::new());
    for q in ["b", "bl", "blk.4", "blk.49", "blk.499", "blk.499.", "up"] {
        let from = if narrows(&last, q) { &rows } else { &all };
        let t = now_ms();
        let next = filter(&cp, from, q);
        console_log!("wasm search keystroke '{q}' at 500k tensors: {:.1} ms, {} rows", now_ms() - t, next.len());
        rows = next;
        last = q.to_owned();
    }
}
