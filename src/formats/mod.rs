//! Tensorscope's formats and checkpoint model, the engine's bottom layer: bytes in, facts out.
//! The sans-IO step protocol and its shared helpers (ranges, findings, hashing, sorting, text,
//! the wire form of results); the header decoders of GGUF, safetensors and pickles, config files
//! and file kinds; the checkpoint model, valid by construction, and the sets that assemble one
//! from many files (shards, splits, pickle sets) with their summary. No I/O, no values.

pub mod config;
pub mod dupes;
pub mod findings;
pub mod gguf;
pub mod hash;
pub mod hidden_text;
pub mod hub;
pub mod json_float;
pub mod kind;
pub mod model;
pub mod names;
pub mod open;
pub mod pickle;
pub mod pickle_set;
pub mod range;
pub mod remote;
pub mod safetensors;
pub mod shard_probe;
pub mod shards;
pub mod sniff;
pub mod sort;
pub mod st_quant;
pub mod step;
pub mod summary;
pub mod text;
pub mod wire;
