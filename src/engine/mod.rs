//! The platform-free, sans-IO engine: no I/O, no async, no web APIs.

pub mod check;
pub mod check_report;
pub mod decode;
pub mod dupes;
pub mod findings;
pub mod fuzz;
pub mod gguf;
pub mod hist_report;
pub mod histogram;
pub mod job;
pub mod model;
pub mod naming;
pub mod npy;
pub mod open;
pub mod plan;
pub mod range;
pub mod remote;
pub mod report;
pub mod safetensors;
pub mod shards;
pub mod sniff;
pub mod stats;
pub mod step;
pub mod summary;
pub mod view;
pub mod viewer;
