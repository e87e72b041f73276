//! Any extent and any selection: every plan keeps its promises (pieces inside, aligned, in order, exact).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::plan_pieces(data));
