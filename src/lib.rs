//! Tensorscope: look inside safetensors and GGUF checkpoints by reading only their headers.
//!
//! The [`engine`] is platform-free and sans-IO; the browser I/O layer and the Leptos UI
//! are thin layers over it, compiled for wasm32 only.

pub use tensorscope_engine as engine;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod io;
#[cfg(target_arch = "wasm32")]
pub mod ui;
