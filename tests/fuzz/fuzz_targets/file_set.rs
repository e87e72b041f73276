//! Any bytes, cut into several files of any kinds, assemble into one checkpoint without panicking.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::assemble_split(data));
