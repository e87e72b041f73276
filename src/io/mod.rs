//! Browser I/O: byte sources over `File.slice()` blobs, feeding the engine's decoders.
//!
//! [`BlobSource`] reads byte ranges of a `Blob`; [`driver::drive`] runs any engine decoder over
//! it, yielding to the browser between chunks, reporting progress and honouring a [`Cancel`].

pub mod blob;
pub mod browser;
pub mod driver;
pub mod entries;
pub mod open;
pub mod values;

pub use blob::BlobSource;
pub use driver::{drive, Cancel, DriveError, DriveOpts};
