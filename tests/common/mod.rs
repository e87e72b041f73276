//! Helpers shared by the host tests: in-memory drivers and byte builders for hostile files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tensorscope::engine::inspections::{assemble, finish};
use tensorscope::engine::model::{Checkpoint, FileInfo, Format};
use tensorscope::engine::open::{FileDecoder, Parsed};
use tensorscope::engine::range::ByteRange;
use tensorscope::engine::shards::Assembling;
use tensorscope::engine::step::{drive, Decoder, Step};

/// Run the `tensorscope` binary: its exit code, stdout and stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = cli().args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// The CLI as a command: run through `TENSORSCOPE_TEST_RUNNER` (a program and its arguments,
/// such as qemu-user's) where that is set, for a CLI built for another architecture.
pub fn cli() -> std::process::Command {
    let exe = env!("CARGO_BIN_EXE_tensorscope");
    let runner = std::env::var("TENSORSCOPE_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(words).arg(exe);
            cmd
        }
        None => std::process::Command::new(exe),
    }
}

/// `tensor` of `file` exported by the CLI as `.npy` in the type it is written in (float32, or an
/// integer type kept as it is stored): its header's dict and its values in the order written,
/// each exactly as an `f64` (integers up to 2^53).
pub fn exported_values(file: &str, tensor: &str) -> (String, Vec<f64>) {
    let (header, body) = exported(file, tensor);
    let descr = header.split("'descr': '").nth(1).and_then(|d| d.split('\'').next()).unwrap_or_default().to_owned();
    macro_rules! each {
        ($t:ty) => {
            body.chunks_exact(std::mem::size_of::<$t>())
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect()
        };
    }
    let values = match descr.as_str() {
        "<f4" => each!(f32),
        "<i8" => each!(i64),
        "<u8" => each!(u64),
        "<i4" => each!(i32),
        "<u4" => each!(u32),
        "<i2" => each!(i16),
        "<u2" => each!(u16),
        "|i1" => each!(i8),
        "|u1" | "|b1" => each!(u8),
        other => panic!("{file} {tensor}: an .npy of {other}"),
    };
    (header, values)
}

/// `tensor` of `file` exported by the CLI as `.npy`: its header's dict and the bytes after it.
fn exported(file: &str, tensor: &str) -> (String, Vec<u8>) {
    let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
    let out = std::env::temp_dir().join(format!("tensorscope-export-{}.npy", unique.replace(['(', ')'], "")));
    let (code, _, err) = run(&["export", file, "--tensor", tensor, "--npy", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{file} {tensor}: {err}");
    let npy = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).ok();
    let header_len = u16::from_le_bytes([npy[8], npy[9]]) as usize;
    let header = String::from_utf8_lossy(&npy[10..10 + header_len]).into_owned();
    (header, npy[10 + header_len..].to_vec())
}

/// `tensor` of `file` exported by the CLI as `.npy` (float32): its header's dict and its values
/// in the order written.
pub fn exported_f32(file: &str, tensor: &str) -> (String, Vec<f32>) {
    let (header, body) = exported(file, tensor);
    assert!(header.contains("'descr': '<f4'"), "{header}");
    (header, body.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
}

/// The `module.name` of each import a `check --json` report lists, of one verdict or all.
pub fn import_names(report: &serde_json::Value, verdict: Option<&str>) -> std::collections::BTreeSet<String> {
    report["imports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| verdict.is_none_or(|v| i["verdict"] == v))
        .map(|i| format!("{}.{}", i["module"].as_str().unwrap(), i["name"].as_str().unwrap()))
        .collect()
}

/// The fixture folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Parse `bytes` as the file `name`, reading in chunks of `chunk` bytes.
pub fn parse(name: &str, bytes: &[u8], chunk: u64) -> Parsed {
    let len = bytes.len() as u64;
    drive(FileDecoder::new(name, len), chunk, |r: ByteRange| {
        Ok::<_, ()>(bytes[r.start.min(len) as usize..r.end.min(len) as usize].to_vec())
    })
    .unwrap()
}

/// Parse `bytes`, cutting every read at the next of `cuts` (absolute offsets): any chunking.
pub fn parse_cut(name: &str, bytes: &[u8], cuts: &[u64]) -> Parsed {
    let len = bytes.len() as u64;
    let mut d = FileDecoder::new(name, len);
    let mut reads = 0u64;
    loop {
        match d.step() {
            Step::Done(p) => return p,
            Step::Need(r) => {
                reads += 1;
                assert!(reads < 10_000_000, "decoder does not make progress");
                let cut = cuts.iter().copied().find(|&c| c > r.start).unwrap_or(u64::MAX);
                let end = r.end.min(cut).min(len).max(r.start + 1).min(len);
                d.feed(r.start, &bytes[r.start.min(len) as usize..end as usize]).unwrap();
            }
        }
    }
}

/// Open in-memory files as one checkpoint, checking that assembling it in pieces (as the
/// browser does) gives the same checkpoint as at once.
pub fn open_all(files: &[(&str, &[u8])]) -> Checkpoint {
    let parsed: Vec<(FileInfo, Parsed)> = files
        .iter()
        .map(|(name, bytes)| (FileInfo::new(name.to_string(), bytes.len() as u64), parse(name, bytes, 1 << 20)))
        .collect();
    let whole = assemble(parsed.clone());
    for piece in [1, 3] {
        let mut a = Assembling::new(parsed.clone());
        let mut steps = 1;
        while !a.step(piece) {
            steps += 1;
        }
        if whole.format == Format::Safetensors {
            assert_eq!(steps, whole.tensors.len().div_ceil(piece).max(1), "steps of {piece}");
        }
        // Compared as text: a NaN in the metadata equals itself there.
        assert_eq!(format!("{:?}", finish(a)), format!("{whole:?}"), "assembled in pieces of {piece}");
    }
    whole
}

/// Open one in-memory file.
pub fn open_one(name: &str, bytes: &[u8]) -> Checkpoint {
    open_all(&[(name, bytes)])
}

/// The codes of a checkpoint's findings.
pub fn codes(cp: &Checkpoint) -> Vec<&'static str> {
    cp.findings.iter().map(|f| f.code).collect()
}

/// Builds GGUF bytes field by field, in either byte order.
#[derive(Default, Clone)]
pub struct Gguf {
    pub big: bool,
    pub bytes: Vec<u8>,
}

impl Gguf {
    /// Magic, version and counts.
    pub fn header(version: u32, tensors: u64, kvs: u64) -> Self {
        let mut g = Gguf::default();
        g.raw(b"GGUF").u32(version).u64(tensors).u64(kvs);
        g
    }

    pub fn header_be(version: u32, tensors: u64, kvs: u64) -> Self {
        let mut g = Gguf { big: true, bytes: Vec::new() };
        g.raw(b"GGUF").u32(version).u64(tensors).u64(kvs);
        g
    }

    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        let b = if self.big { v.to_be_bytes() } else { v.to_le_bytes() };
        self.raw(&b)
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        let b = if self.big { v.to_be_bytes() } else { v.to_le_bytes() };
        self.raw(&b)
    }

    /// A length-prefixed string.
    pub fn str(&mut self, s: &[u8]) -> &mut Self {
        self.u64(s.len() as u64).raw(s)
    }

    /// A key/value with a u32 value.
    pub fn kv_u32(&mut self, key: &str, v: u32) -> &mut Self {
        self.str(key.as_bytes()).u32(4).u32(v)
    }

    /// A key/value with a string value.
    pub fn kv_str(&mut self, key: &str, v: &str) -> &mut Self {
        self.str(key.as_bytes()).u32(8).str(v.as_bytes())
    }

    /// A tensor info.
    pub fn tensor(&mut self, name: &str, ne: &[u64], ggml_type: u32, rel_offset: u64) -> &mut Self {
        self.str(name.as_bytes()).u32(ne.len() as u32);
        for &d in ne {
            self.u64(d);
        }
        self.u32(ggml_type).u64(rel_offset)
    }

    /// Zero padding up to a multiple of `align`.
    pub fn pad(&mut self, align: usize) -> &mut Self {
        while !self.bytes.len().is_multiple_of(align) {
            self.bytes.push(0);
        }
        self
    }

    /// `n` zero bytes of tensor data.
    pub fn data(&mut self, n: usize) -> &mut Self {
        self.bytes.resize(self.bytes.len() + n, 0);
        self
    }

    pub fn build(&self) -> Vec<u8> {
        self.bytes.clone()
    }
}

/// safetensors bytes from a header JSON text and `data_len` zero bytes of data.
pub fn safetensors(header: &str, data_len: usize) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.resize(b.len() + data_len, 0);
    b
}

/// A small deterministic xorshift generator for mutation tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// An empty folder of this test process for `name`.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tensorscope-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
