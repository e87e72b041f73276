//! Any bytes decode as a safetensors index without panicking.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::decode_as("model.safetensors.index.json", data));
