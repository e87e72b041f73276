//! Browser I/O: byte sources over `File.slice()` blobs and HTTP ranges, feeding the engine's decoders.
//!
//! [`BlobSource`] reads byte ranges of a `Blob`, [`HttpSource`] of a URL (`Range` requests);
//! [`Source`] is either; [`driver::run`] runs any engine job over a checkpoint's sources,
//! yielding to the browser between chunks, reporting progress and honouring a [`Cancel`].

pub mod browser;
pub mod entries;
pub mod hub;
pub mod open;
pub mod pool;
pub mod values;
pub mod workers;

pub use tensorscope_webio::{blob, driver, http, seed_hashes, source, transfer, watchdog};
pub use tensorscope_webio::{run, BlobSource, Cancel, HttpSource, Meter, RunError, Source};
