//! A synthesized tensor of any dtype read through the read planner by the histogram job.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::run_job(0, data));
