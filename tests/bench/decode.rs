//! Decode benchmark: MB/s of encoded input and values/s, decode alone and the histogram the
//! viewer and `hist` compute (the same sink: by code or group where the type allows, decoded
//! values otherwise), for every GGML type and the safetensors float dtypes, on one thread. Run
//! with `cargo bench --bench decode` (`TENSORSCOPE_BENCH_TYPES=Q4_K,Q8_0` to pick types;
//! `TENSORSCOPE_BENCH_GGUF=DIR` to read `DIR/<type>.gguf`, the weight-like blocks
//! scripts/bench-ggml.sh writes, instead of random blocks). Numbers are printed, never asserted.

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    native::main();
}

#[cfg(not(target_arch = "wasm32"))]
mod input;

/// The benchmark proper, for the host only.
#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::time::Instant;

    use tensorscope::engine::decode::{ggml, st_dtypes, BlockCodec};
    use tensorscope::engine::gguf::GgmlType;
    use tensorscope::engine::job::{HistogramSink, Sink};
    use tensorscope::engine::safetensors::Dtype;

    /// Encoded bytes per measurement.
    const INPUT_BYTES: usize = 64 << 20;
    /// Values decoded per batch, as the scan does.
    const BATCH_ELEMS: usize = 1 << 14;

    /// The blocks to measure: the tail of `$TENSORSCOPE_BENCH_GGUF/<name>.gguf` (a one-tensor
    /// file whose data ends it), or random blocks.
    fn input(name: &str, codec: &BlockCodec) -> Vec<u8> {
        if let Some(dir) = std::env::var_os("TENSORSCOPE_BENCH_GGUF") {
            if let Ok(file) = std::fs::read(std::path::Path::new(&dir).join(format!("{name}.gguf"))) {
                let n = (file.len() - 4096) / codec.block_bytes * codec.block_bytes;
                return file[file.len() - n..].to_vec();
            }
        }
        super::input::blocks(codec, INPUT_BYTES)
    }

    fn run(name: &str, codec: BlockCodec) {
        let data = input(name, &codec);
        let batch_bytes = (BATCH_ELEMS / codec.block_elems).max(1) * codec.block_bytes;
        let mut values = vec![0f32; batch_bytes / codec.block_bytes * codec.block_elems];
        let values_total = (data.len() / codec.block_bytes * codec.block_elems) as f64;
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let t = Instant::now();
            for chunk in data.chunks(batch_bytes) {
                let n = chunk.len() / codec.block_bytes * codec.block_elems;
                (codec.decode)(chunk, &mut values[..n]);
            }
            std::hint::black_box(&values);
            let decode = t.elapsed().as_secs_f64();
            let mut sink = HistogramSink::new(&codec, false);
            let t = Instant::now();
            // Pieces of 1 MiB, as scans read them.
            for piece in data.chunks((1 << 20) / codec.block_bytes * codec.block_bytes) {
                if sink.wants_values() {
                    for chunk in piece.chunks(batch_bytes) {
                        let n = chunk.len() / codec.block_bytes * codec.block_elems;
                        (codec.decode)(chunk, &mut values[..n]);
                        sink.values(0, &values[..n]);
                    }
                } else {
                    sink.raw(piece);
                }
                sink.piece_done();
            }
            sink.finish();
            std::hint::black_box(sink.values.bins(64));
            best = (best.0.min(decode), best.1.min(t.elapsed().as_secs_f64()));
        }
        let mb = data.len() as f64 / 1e6;
        println!(
            "{name:<12} decode {:>8.0} MB/s {:>7.0} Mval/s   histogram {:>8.0} MB/s {:>7.0} Mval/s",
            mb / best.0,
            values_total / best.0 / 1e6,
            mb / best.1,
            values_total / best.1 / 1e6
        );
    }

    pub fn main() {
        let only: Option<Vec<String>> =
            std::env::var("TENSORSCOPE_BENCH_TYPES").ok().map(|s| s.split(',').map(str::to_owned).collect());
        let wanted = |n: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == n));
        println!("input {} MB per type, batches of {BATCH_ELEMS} values, best of 3", INPUT_BYTES >> 20);
        for t in GgmlType::all() {
            if let Some(codec) = ggml::codec(t).filter(|_| wanted(&t.name())) {
                run(&t.name(), codec);
            }
        }
        for d in [Dtype::F8_E4M3, Dtype::F8_E5M2, Dtype::F4, Dtype::F6_E2M3] {
            if wanted(d.name()) {
                run(&format!("st {}", d.name()), st_dtypes::codec(d));
            }
        }
    }
}
