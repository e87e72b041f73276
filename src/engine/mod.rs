//! The platform-free, sans-IO engine: no I/O, no async, no web APIs.

pub mod findings;
pub mod range;
pub mod step;
