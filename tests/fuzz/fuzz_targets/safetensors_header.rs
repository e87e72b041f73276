//! Any bytes, in any chunking, decode as safetensors without panicking.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::decode_as("x.safetensors", data));
