//! Any block bytes of any type decode, histogram and bin without panicking.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::decode_values(data));
