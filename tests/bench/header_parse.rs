//! Header-parse benchmark: prints timings for a real-size GGUF header (152k-token vocabulary,
//! 151k merges, chat template, 339 tensors) and for a 100k-tensor safetensors index and header.
//!
//! Run with `cargo bench --bench header_parse`. Numbers are printed, never asserted.

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    native::main();
}

/// The benchmark proper, for the host only.
#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use tensorscope::cli::open_paths;
    use tensorscope::engine::safetensors::{parse_index, IndexDecoder};
    use tensorscope::engine::step::{drive, CHUNK_BYTES};

    const VOCAB: usize = 152_064;
    const MERGES: usize = 151_387;
    const TENSORS: usize = 100_000;

    struct W(Vec<u8>);

    impl W {
        fn u32(&mut self, v: u32) -> &mut Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn u64(&mut self, v: u64) -> &mut Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn str(&mut self, s: &str) -> &mut Self {
            self.u64(s.len() as u64);
            self.0.extend_from_slice(s.as_bytes());
            self
        }
    }

    /// A Qwen2-7B-shaped GGUF header (tensor data left sparse).
    fn write_gguf(path: &Path) -> u64 {
        let layers = 28;
        let per_layer = [
            "attn_q",
            "attn_k",
            "attn_v",
            "attn_output",
            "ffn_gate",
            "ffn_up",
            "ffn_down",
            "attn_norm",
            "ffn_norm",
            "attn_q.bias",
            "attn_k.bias",
            "attn_v.bias",
        ];
        let n_tensors = layers * per_layer.len() + 3;
        let mut w = W(Vec::with_capacity(8 << 20));
        w.0.extend_from_slice(b"GGUF");
        w.u32(3).u64(n_tensors as u64).u64(8);
        w.str("general.architecture").u32(8).str("qwen2");
        w.str("general.name").u32(8).str("Bench 7B Instruct");
        w.str("general.file_type").u32(4).u32(15);
        w.str("qwen2.block_count").u32(4).u32(layers as u32);
        w.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(VOCAB as u64);
        for i in 0..VOCAB {
            w.str(&format!("Ġtok{i}"));
        }
        w.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(VOCAB as u64);
        for i in 0..VOCAB {
            w.u32((i % 3) as u32);
        }
        w.str("tokenizer.ggml.merges").u32(9).u32(8).u64(MERGES as u64);
        for i in 0..MERGES {
            w.str(&format!("Ġt ok{i}"));
        }
        let template = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}".repeat(40);
        w.str("tokenizer.chat_template").u32(8).str(&template);
        let mut rel = 0u64;
        let mut add = |w: &mut W, name: &str, ne: &[u64], ty: u32, bytes: u64| {
            w.str(name).u32(ne.len() as u32);
            for &d in ne {
                w.u64(d);
            }
            w.u32(ty).u64(rel);
            rel += bytes.next_multiple_of(32);
        };
        add(&mut w, "token_embd.weight", &[3584, VOCAB as u64], 12, 3584 * VOCAB as u64 / 256 * 144);
        for l in 0..layers {
            for t in per_layer {
                let (ne, ty, bytes): (&[u64], u32, u64) = match t {
                    "attn_norm" | "ffn_norm" => (&[3584], 0, 3584 * 4),
                    t if t.ends_with(".bias") => (&[512], 0, 512 * 4),
                    "ffn_gate" | "ffn_up" | "ffn_down" => (&[3584, 18944], 12, 3584 * 18944 / 256 * 144),
                    _ => (&[3584, 3584], 14, 3584 * 3584 / 256 * 210),
                };
                let name = if t.contains('.') { format!("blk.{l}.{t}") } else { format!("blk.{l}.{t}.weight") };
                add(&mut w, &name, ne, ty, bytes);
            }
        }
        add(&mut w, "output_norm.weight", &[3584], 0, 3584 * 4);
        add(&mut w, "output.weight", &[3584, VOCAB as u64], 14, 3584 * VOCAB as u64 / 256 * 210);
        while !w.0.len().is_multiple_of(32) {
            w.0.push(0);
        }
        let header_len = w.0.len() as u64;
        std::fs::write(path, &w.0).unwrap();
        std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(header_len + rel).unwrap();
        header_len
    }

    /// A GGUF header of `n` small F32 tensors (an extreme mixture-of-experts layout).
    fn gguf_many_tensors(n: usize) -> Vec<u8> {
        let mut w = W(Vec::new());
        w.0.extend_from_slice(b"GGUF");
        w.u32(3).u64(n as u64).u64(0);
        for i in 0..n {
            w.str(&format!("blk.{}.ffn_up_exps.{}.weight", i / 1000, i % 1000)).u32(1).u64(8).u32(0).u64(i as u64 * 32);
        }
        while !w.0.len().is_multiple_of(32) {
            w.0.push(0);
        }
        w.0.resize(w.0.len() + n * 32, 0);
        w.0
    }

    fn index_json(n: usize) -> Vec<u8> {
        let mut s = String::from("{\"metadata\":{\"total_size\":0},\"weight_map\":{");
        for i in 0..n {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!(
                "\"model.layers.{}.experts.{}.mlp.up_proj.weight\":\"model-{:05}-of-00163.safetensors\"",
                i / 1000,
                i % 1000,
                i % 163 + 1
            ));
        }
        s.push_str("}}");
        s.into_bytes()
    }

    fn safetensors_header(n: usize) -> Vec<u8> {
        let mut s = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
        for i in 0..n {
            s.push_str(&format!(
                ",\"model.layers.{}.experts.{}.w\":{{\"dtype\":\"BF16\",\"shape\":[16,16],\"data_offsets\":[{},{}]}}",
                i / 1000,
                i % 1000,
                i * 512,
                i * 512 + 512
            ));
        }
        s.push('}');
        let mut b = (s.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(s.as_bytes());
        b.resize(b.len() + n * 512, 0);
        b
    }

    /// The viewer's table logic over 500k tensors: sorting by a column, and filtering per keystroke.
    fn viewer_table(out: &mut std::io::Stdout) {
        use tensorscope::engine::gguf::GgmlType;
        use tensorscope::engine::model::{Checkpoint, Dtype, Format, Tensor};
        use tensorscope::engine::view::{filter, sorted, Column};
        let n = 500_000u64;
        let tensors = (0..n)
            .map(|i| Tensor {
                name: format!("blk.{}.ffn_up_exps.{}.weight", i / 1000, i % 1000),
                dtype: Dtype::Ggml(GgmlType((i % 3) as u32 * 6)),
                shape: vec![4096, 1 + i % 7],
                file: 0,
                offset: Some(i * 4096),
                nbytes: 4096,
                data: Err(tensorscope::engine::model::Lost::NoSize),
                strides: None,
            })
            .collect();
        let cp = Checkpoint { tensors, ..Checkpoint::empty(Format::Gguf) };
        writeln!(out, "viewer table  {n} tensors").unwrap();
        for (col, label) in [(Column::Name, "name"), (Column::Dtype, "dtype"), (Column::Params, "params")] {
            let (med, _) = time(5, || {
                std::hint::black_box(sorted(&cp, col, false));
            });
            writeln!(out, "  sort by {label:<6}                     median {}", ms(med)).unwrap();
        }
        let order = sorted(&cp, Column::Index, false);
        for pattern in ["ffn_up", "blk.4*.ffn*", "no such name"] {
            let (med, _) = time(5, || {
                std::hint::black_box(filter(&cp, &order, pattern));
            });
            writeln!(out, "  filter {pattern:<14}              median {}", ms(med)).unwrap();
        }
    }

    /// Median and minimum of `runs` timings of `f`.
    fn time(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
        let mut t: Vec<Duration> = (0..runs)
            .map(|_| {
                let s = Instant::now();
                f();
                s.elapsed()
            })
            .collect();
        t.sort();
        (t[runs / 2], t[0])
    }

    fn ms(d: Duration) -> String {
        format!("{:8.2} ms", d.as_secs_f64() * 1e3)
    }

    pub fn main() {
        // TENSORSCOPE_BENCH_DIR keeps the generated files, to time other tools on the same bytes.
        let keep = std::env::var_os("TENSORSCOPE_BENCH_DIR").map(PathBuf::from);
        let dir = keep
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join(format!("tensorscope-bench-{}", std::process::id())));
        std::fs::create_dir_all(&dir).unwrap();
        let out = &mut std::io::stdout();

        let gguf = dir.join("bench-7B-Q4_K_M.gguf");
        let header_len = write_gguf(&gguf);
        let size = std::fs::metadata(&gguf).unwrap().len();
        let (med, min) = time(15, || {
            let (cp, _) = open_paths(std::slice::from_ref(&gguf)).unwrap();
            assert_eq!(cp.tensors.len(), 339);
        });
        writeln!(
            out,
            "gguf header  {:.1} MB header ({VOCAB} tokens, {MERGES} merges) of a {:.1} GB file",
            header_len as f64 / 1e6,
            size as f64 / 1e9
        )
        .unwrap();
        writeln!(
            out,
            "  engine parse (in process)          median {} min {}  {:.0} MB/s",
            ms(med),
            ms(min),
            header_len as f64 / 1e6 / med.as_secs_f64()
        )
        .unwrap();
        let exe = env!("CARGO_BIN_EXE_tensorscope");
        let (med, min) = time(15, || {
            let s = Command::new(exe).arg("check").arg(&gguf).output().unwrap();
            assert!(s.status.success());
        });
        writeln!(
            out,
            "  `tensorscope check` process        median {} min {}  (process start included)",
            ms(med),
            ms(min)
        )
        .unwrap();

        let many = dir.join("many.gguf");
        std::fs::write(&many, gguf_many_tensors(TENSORS)).unwrap();
        let (med, min) = time(15, || {
            let (cp, _) = open_paths(std::slice::from_ref(&many)).unwrap();
            assert_eq!(cp.tensors.len(), TENSORS);
        });
        writeln!(out, "gguf header  {TENSORS} tensor infos").unwrap();
        writeln!(out, "  engine parse + validate            median {} min {}", ms(med), ms(min)).unwrap();

        let index = index_json(TENSORS);
        let (med, min) = time(15, || {
            let bytes = &index;
            let i = drive(IndexDecoder::new(bytes.len() as u64), CHUNK_BYTES, |r| {
                Ok::<_, ()>(bytes[r.start as usize..r.end as usize].to_vec())
            })
            .unwrap();
            assert_eq!(i.weight_map.len(), TENSORS);
        });
        writeln!(out, "safetensors index  {TENSORS} tensors, {:.1} MB", index.len() as f64 / 1e6).unwrap();
        writeln!(out, "  engine parse (in process)          median {} min {}", ms(med), ms(min)).unwrap();
        let (med, _) = time(15, || {
            let _ = parse_index(&index);
        });
        writeln!(out, "  of which JSON parse                median {}", ms(med)).unwrap();

        let st = dir.join("many.safetensors");
        let bytes = safetensors_header(TENSORS);
        std::fs::write(&st, &bytes).unwrap();
        let (med, min) = time(15, || {
            let (cp, _) = open_paths(std::slice::from_ref(&st)).unwrap();
            assert_eq!(cp.tensors.len(), TENSORS);
        });
        writeln!(
            out,
            "safetensors header  {TENSORS} tensors, {:.1} MB header",
            (bytes.len() - TENSORS * 512) as f64 / 1e6
        )
        .unwrap();
        writeln!(out, "  engine parse + validate            median {} min {}", ms(med), ms(min)).unwrap();
        viewer_table(out);
        if keep.is_none() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
