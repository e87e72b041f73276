//! A synthesized tensor of any dtype exported by the .npy job through the read planner.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::run_job(1, data));
