//! Browser I/O: byte sources over `File.slice()` blobs and HTTP ranges, feeding the engine's decoders.
//!
//! [`BlobSource`] reads byte ranges of a `Blob`, [`HttpSource`] of a URL (`Range` requests);
//! [`Source`] is either; [`driver::run`] runs any engine job over a checkpoint's sources,
//! yielding to the browser between chunks, reporting progress and honouring a [`Cancel`].

pub mod blob;
pub mod browser;
pub mod driver;
pub mod entries;
pub mod http;
pub mod open;
pub mod pool;
pub mod source;
pub mod values;
pub mod watchdog;
pub mod worker;
pub mod workers;

pub use crate::engine::job::RunError;
pub use blob::BlobSource;
pub use driver::{run, Cancel};
pub use http::{HttpSource, Meter};
pub use source::Source;

/// Key the engine's hash maps with this page's (or worker's) own randomness (see
/// `engine::hash`): without it every page would hash tensor names under the same keys.
pub fn seed_hashes() {
    let word = || {
        let half = || (js_sys::Math::random() * 4_294_967_296.0) as u64;
        half() << 32 | half()
    };
    crate::engine::hash::seed(word(), word());
}
