//! `io::BlobSource`: byte ranges of a `Blob` (a dropped `File`) via `slice(a, b).arrayBuffer()`.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

use tensorscope_values::range::ByteRange;

/// A readable Blob and its length. Offsets are `u64`; `f64` holds them exactly up to 2^53 bytes.
#[derive(Clone, Debug)]
pub struct BlobSource {
    blob: Blob,
    len: u64,
    bytes_read: Rc<Cell<u64>>,
}

impl BlobSource {
    /// A source over `blob`.
    pub fn new(blob: Blob) -> Self {
        let len = blob.size() as u64;
        BlobSource { blob, len, bytes_read: Rc::default() }
    }

    /// The blob read (structured-cloneable: a worker reads its own slices of it).
    pub fn blob(&self) -> &Blob {
        &self.blob
    }

    /// Count bytes a worker read of this blob.
    pub fn count_elsewhere(&self, bytes: u64) {
        self.bytes_read.set(self.bytes_read.get() + bytes);
    }

    /// The blob's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the blob is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes read through this source (and its clones) so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.get()
    }

    /// The bytes of `range` clamped to the blob: fewer (or none) past its end.
    pub async fn read(&self, range: ByteRange) -> Result<Vec<u8>, String> {
        self.begin(range)?.bytes().await
    }

    /// Start reading `range` (clamped to the blob) now; its bytes come with
    /// [`BlobRead::bytes`]. A read dropped unawaited is just not used.
    pub fn begin(&self, range: ByteRange) -> Result<BlobRead, String> {
        let end = range.end.min(self.len);
        if range.start >= end {
            return Ok(BlobRead { buf: None, counter: self.bytes_read.clone() });
        }
        let slice = self.blob.slice_with_f64_and_f64(range.start as f64, end as f64).map_err(js_error)?;
        Ok(BlobRead { buf: Some(JsFuture::from(slice.array_buffer())), counter: self.bytes_read.clone() })
    }
}

/// A read of a blob under way.
pub struct BlobRead {
    buf: Option<JsFuture>,
    counter: Rc<Cell<u64>>,
}

impl BlobRead {
    /// The bytes read.
    pub async fn bytes(self) -> Result<Vec<u8>, String> {
        let Some(buf) = self.buf else { return Ok(Vec::new()) };
        let bytes = Uint8Array::new(&buf.await.map_err(js_error)?).to_vec();
        self.counter.set(self.counter.get() + bytes.len() as u64);
        Ok(bytes)
    }
}

/// A JS exception as text.
pub fn js_error(e: JsValue) -> String {
    e.as_string()
        .or_else(|| js_sys::Reflect::get(&e, &"message".into()).ok().and_then(|m| m.as_string()))
        .unwrap_or_else(|| format!("{e:?}"))
}
