//! Opening at scale: time and peak heap for a safetensors header of 500k tensors (the size of
//! today's largest MoE checkpoints), a GGUF of 1M metadata keys, and a set of 10k shards with
//! its index, each opened through the open job and reported as the CLI's `check --json` would.
//!
//! Run with `cargo bench --bench open_scale`. Numbers are printed, never asserted.

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    native::main();
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use tensorscope::engine::inspections::assemble;
    use tensorscope::engine::job::{self, headers_job};
    use tensorscope::engine::model::FileInfo;
    use tensorscope::engine::report::Report;

    /// The system allocator, counting live and peak bytes.
    struct Counting;

    static LIVE: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(l) };
            if !p.is_null() {
                let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            }
            p
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            unsafe { System.dealloc(p, l) };
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
    }

    #[global_allocator]
    static A: Counting = Counting;

    fn safetensors_header(n: usize) -> Vec<u8> {
        let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
        let mut off = 0u64;
        for i in 0..n {
            let (layer, expert) = (i / 5000, i % 5000);
            let bytes = 2 * 2048 * 768;
            json.push_str(&format!(
                ",\"model.layers.{layer}.mlp.experts.{expert}.down_proj.weight\":{{\"dtype\":\"BF16\",\"shape\":[2048,768],\"data_offsets\":[{off},{}]}}",
                off + bytes
            ));
            off += bytes;
        }
        json.push('}');
        let mut b = (json.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(json.as_bytes());
        b
    }

    fn gguf_many_keys(n: usize) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend((n as u64).to_le_bytes());
        for i in 0..n {
            let key = format!("test.key.{i:07}");
            b.extend((key.len() as u64).to_le_bytes());
            b.extend(key.as_bytes());
            b.extend(4u32.to_le_bytes());
            b.extend((i as u32).to_le_bytes());
        }
        b
    }

    /// `n` one-tensor shards and their index.
    fn shard_set(n: usize) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        let mut map = String::from("{\"metadata\":{\"total_size\":0},\"weight_map\":{");
        for i in 0..n {
            let name = format!("model-{:05}-of-{n:05}.safetensors", i + 1);
            let t = format!("model.layers.{i}.w");
            let json = format!("{{\"{t}\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}}}");
            let mut b = (json.len() as u64).to_le_bytes().to_vec();
            b.extend_from_slice(json.as_bytes());
            b.extend([0u8; 4]);
            if i > 0 {
                map.push(',');
            }
            map.push_str(&format!("\"{t}\":\"{name}\""));
            files.push((name, b));
        }
        map.push_str("}}");
        files.push(("model.safetensors.index.json".into(), map.into_bytes()));
        files
    }

    /// Open in-memory files (data past the header left sparse: only header bytes exist) through
    /// the open job and write the check report to nowhere; print time and peak heap.
    fn measure(what: &str, files: Vec<(String, Vec<u8>, u64)>) {
        // `cargo bench` passes `--bench`: only a plain argument picks a case.
        if std::env::args().skip(1).find(|a| !a.starts_with("--")).is_some_and(|only| !what.contains(&only)) {
            return;
        }
        let input: usize = files.iter().map(|f| f.1.len()).sum();
        let infos: Vec<FileInfo> = files.iter().map(|(n, _, len)| FileInfo::new(n.clone(), *len)).collect();
        let lens: Vec<u64> = files.iter().map(|f| f.2).collect();
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t0 = Instant::now();
        let parsed = job::run(headers_job(infos), lens, |f, r, buf| {
            let b = &files[f].1;
            let end = (r.end as usize).min(b.len());
            *buf = b[(r.start as usize).min(end)..end].to_vec();
            buf.resize(r.len() as usize, 0);
            Ok(())
        })
        .expect("opens");
        let cp = assemble(parsed);
        let opened = t0.elapsed();
        let mut sink = std::io::sink();
        serde_json::to_writer_pretty(&mut sink, &Report::inspect(&cp)).unwrap();
        let total = t0.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - base;
        println!(
            "{what:<34} input {:>6.1} MB  open {:>7.1} ms  + report {:>7.1} ms  peak heap {:>7.1} MB ({:.2}x input)  {} tensors, {} keys, {} findings",
            input as f64 / 1e6,
            opened.as_secs_f64() * 1e3,
            (total - opened).as_secs_f64() * 1e3,
            peak as f64 / 1e6,
            peak as f64 / input as f64,
            cp.tensors.len(),
            cp.metadata.len(),
            cp.findings.len()
        );
    }

    pub fn main() {
        let st = safetensors_header(500_000);
        let st_len = st.len() as u64 + 500_000 * 2 * 2048 * 768;
        measure("safetensors header, 500k tensors", vec![("model.safetensors".into(), st, st_len)]);
        let g = gguf_many_keys(1_000_000);
        let g_len = g.len() as u64;
        measure("GGUF, 1M metadata keys", vec![("many.gguf".into(), g, g_len)]);
        let set: Vec<(String, Vec<u8>, u64)> = shard_set(10_000)
            .into_iter()
            .map(|(n, b)| {
                let l = b.len() as u64;
                (n, b, l)
            })
            .collect();
        measure("10k shards + index", set);
    }
}
