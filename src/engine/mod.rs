//! The platform-free, sans-IO engine: no I/O, no async, no web APIs. Its top layer: the
//! analyses of an assembled checkpoint (kinds' descriptions, estimates, adapters, tokenizers,
//! templates, diffs, projector fit, naming), the reports, and the viewer's logic, over
//! [`tensorscope_values`] and [`tensorscope_formats`], whose modules it re-exports.

pub use tensorscope_formats::config;
pub use tensorscope_formats::dupes;
pub use tensorscope_formats::findings;
pub use tensorscope_formats::gguf;
pub use tensorscope_formats::hash;
pub use tensorscope_formats::hidden_text;
pub use tensorscope_formats::hub;
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
pub use tensorscope_values::codes;
pub use tensorscope_values::decode;
pub use tensorscope_values::decode::by_scale;
pub use tensorscope_values::histogram;
pub use tensorscope_values::job;
pub use tensorscope_values::npy;
pub use tensorscope_values::plan;
pub use tensorscope_values::stats;

pub mod adapter;
pub mod check;
pub mod check_report;
pub mod describe;
pub mod diff;
pub mod diff_report;
pub mod diff_values;
pub mod digest;
pub mod draft;
pub mod estimate;
pub mod fit;
pub mod fuzz;
pub mod hist_report;
pub mod inspections;
pub mod naming;
pub mod projector;
pub mod repo_report;
pub mod report;
pub mod template;
#[cfg(feature = "render")]
pub mod template_render;
pub mod tokens;
pub mod training;
pub mod variants;
pub mod view;
pub mod viewer;
