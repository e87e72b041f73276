//! A synthesized file hashed and scanned by the check job through the read planner.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::run_job(2, data));
