//! Any extent, any selection
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]|  every plan keeps its promises (pieces inside, aligned, in order, exact).:tensorscope::engine::fuzz::plan_pieces(data));
