//! Tensorscope's values layer, over the formats: the codecs of every dtype and GGML type and their
//! kernels, the read planner, histograms, statistics and code counts, `.npy`, and the jobs that
//! read values or bytes, cut into orders that the CLI's threads and the browser's workers run
//! alike.

pub use tensorscope_formats::config;
pub use tensorscope_formats::dupes;
pub use tensorscope_formats::findings;
pub use tensorscope_formats::gguf;
pub use tensorscope_formats::hash;
pub use tensorscope_formats::hidden_text;
pub use tensorscope_formats::json_float;
pub use tensorscope_formats::kind;
pub use tensorscope_formats::model;
pub use tensorscope_formats::names;
pub use tensorscope_formats::open;
pub use tensorscope_formats::pickle;
pub use tensorscope_formats::pickle_set;
pub use tensorscope_formats::range;
pub use tensorscope_formats::remote;
pub use tensorscope_formats::safetensors;
pub use tensorscope_formats::shard_probe;
pub use tensorscope_formats::shards;
pub use tensorscope_formats::sniff;
pub use tensorscope_formats::sort;
pub use tensorscope_formats::st_quant;
pub use tensorscope_formats::step;
pub use tensorscope_formats::summary;
pub use tensorscope_formats::text;
pub use tensorscope_formats::wire;

pub mod ahead;
pub mod codes;
pub mod decode;
pub mod fine;
pub mod histogram;
pub mod job;
pub mod npy;
pub mod plan;
pub mod stats;
