//! The platform-free, sans-IO engine: no I/O, no async, no web APIs.

pub mod decode;
pub mod findings;
pub mod fuzz;
pub mod gguf;
pub mod model;
pub mod naming;
pub mod open;
pub mod range;
pub mod report;
pub mod safetensors;
pub mod shards;
pub mod sniff;
pub mod step;
pub mod summary;
