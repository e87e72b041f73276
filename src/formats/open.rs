//! Opening one file of any kind: sniff its first bytes, then run the matching decoder.

use super::config::{is_template_file, ConfigDecoder, ConfigRead};
use super::gguf;
use super::range::ByteRange;
use super::safetensors;
use super::sniff::{sniff, FileKind, SNIFF_BYTES};
use super::step::{Decoder, FeedError, Step, Window};

/// What one file turned out to hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    Gguf(gguf::Header),
    Safetensors(safetensors::Header),
    Index(safetensors::Index),
    Config(ConfigRead),
    Pickle(super::pickle::PickleRead),
    Other,
}

enum Inner {
    Sniff(Window),
    Gguf(Box<gguf::HeaderDecoder>),
    Safetensors(safetensors::HeaderDecoder),
    Index(safetensors::IndexDecoder),
    Config(ConfigDecoder),
    /// A pickle decoder, and whether only a torch archive counts (a zip sniffed by its bytes).
    Pickle(Box<super::pickle::PickleDecoder>, bool),
    Done(Option<Parsed>),
}

/// Decodes one file whatever its kind; the sniffed bytes are reused, not read twice.
pub struct FileDecoder {
    name: String,
    file_len: u64,
    inner: Inner,
}

impl FileDecoder {
    /// A decoder for the file called `name` (its path or file name) of `file_len` bytes.
    pub fn new(name: &str, file_len: u64) -> Self {
        FileDecoder { name: name.to_owned(), file_len, inner: Inner::Sniff(Window::new(0)) }
    }
}

impl Decoder for FileDecoder {
    type Output = Parsed;

    fn step(&mut self) -> Step<Parsed> {
        loop {
            match &mut self.inner {
                Inner::Sniff(w) => {
                    let want = SNIFF_BYTES.min(self.file_len);
                    if w.end() < want {
                        return Step::Need(ByteRange::new(w.end(), want));
                    }
                    let head = w.bytes().to_vec();
                    let mut inner = match sniff(&self.name, &head) {
                        FileKind::Gguf => Inner::Gguf(Box::new(gguf::HeaderDecoder::new(self.file_len))),
                        FileKind::Safetensors => Inner::Safetensors(safetensors::HeaderDecoder::new(self.file_len)),
                        FileKind::Index => Inner::Index(safetensors::IndexDecoder::new(self.file_len)),
                        FileKind::Config if is_template_file(&self.name) => {
                            Inner::Config(ConfigDecoder::text(self.file_len))
                        }
                        FileKind::Config => Inner::Config(ConfigDecoder::new(self.file_len)),
                        FileKind::Pickle(_) => Inner::Pickle(
                            Box::new(super::pickle::PickleDecoder::new(self.file_len, head.starts_with(b"PK\x03\x04"))),
                            false,
                        ),
                        FileKind::Zip => {
                            Inner::Pickle(Box::new(super::pickle::PickleDecoder::new(self.file_len, true)), true)
                        }
                        FileKind::Other => Inner::Done(Some(Parsed::Other)),
                    };
                    let fed = match &mut inner {
                        Inner::Gguf(d) => d.feed(0, &head),
                        Inner::Safetensors(d) => d.feed(0, &head),
                        Inner::Index(d) => d.feed(0, &head),
                        Inner::Config(d) => d.feed(0, &head),
                        _ => Ok(()),
                    };
                    fed.expect("a new decoder takes bytes from offset 0");
                    self.inner = inner;
                }
                Inner::Gguf(d) => match d.step() {
                    Step::Need(r) => return Step::Need(r),
                    Step::Done(h) => self.inner = Inner::Done(Some(Parsed::Gguf(h))),
                },
                Inner::Safetensors(d) => match d.step() {
                    Step::Need(r) => return Step::Need(r),
                    Step::Done(h) => self.inner = Inner::Done(Some(Parsed::Safetensors(h))),
                },
                Inner::Index(d) => match d.step() {
                    Step::Need(r) => return Step::Need(r),
                    Step::Done(i) => self.inner = Inner::Done(Some(Parsed::Index(i))),
                },
                Inner::Config(d) => match d.step() {
                    Step::Need(r) => return Step::Need(r),
                    Step::Done(c) => self.inner = Inner::Done(Some(Parsed::Config(c))),
                },
                Inner::Pickle(d, only_torch) => match d.step() {
                    Step::Need(r) => return Step::Need(r),
                    Step::Done(p) if *only_torch && !p.found_data_pkl() => {
                        self.inner = Inner::Done(Some(Parsed::Other))
                    }
                    Step::Done(p) => self.inner = Inner::Done(Some(Parsed::Pickle(p))),
                },
                Inner::Done(out) => return Step::Done(out.take().unwrap_or(Parsed::Other)),
            }
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match &mut self.inner {
            Inner::Sniff(w) => w.push(offset, bytes),
            Inner::Gguf(d) => d.feed(offset, bytes),
            Inner::Safetensors(d) => d.feed(offset, bytes),
            Inner::Index(d) => d.feed(offset, bytes),
            Inner::Config(d) => d.feed(offset, bytes),
            Inner::Pickle(d, _) => d.feed(offset, bytes),
            Inner::Done(_) => Ok(()),
        }
    }
}
