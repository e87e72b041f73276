//! Any bytes run through the pickle machine, the tensor finder and the torch containers
//! without panicking, hanging or allocating what they claim.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::pickle(data));
