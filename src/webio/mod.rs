//! Browser I/O shared by the page and its workers: byte sources over `File.slice()` blobs and
//! HTTP ranges, the driver that runs any engine job over them (yielding to the browser between
//! chunks, reporting progress, honouring a [`Cancel`]), and what crosses between page and worker.
//! The page's viewer and the workers' wasm both build on it; it is compiled for wasm32 only.
#![cfg(target_arch = "wasm32")]

pub mod blob;
pub mod cancel;
pub mod driver;
pub mod http;
pub mod source;
pub mod transfer;
pub mod watchdog;

pub use blob::BlobSource;
pub use driver::{run, Cancel};
pub use http::{HttpSource, Meter};
pub use source::Source;
pub use tensorscope_values::job::RunError;

/// Key the engine's hash maps with this page's (or worker's) own randomness (see
/// `formats::hash`): without it every page would hash tensor names under the same keys.
pub fn seed_hashes() {
    let word = || {
        let half = || (js_sys::Math::random() * 4_294_967_296.0) as u64;
        half() << 32 | half()
    };
    tensorscope_values::hash::seed(word(), word());
}
