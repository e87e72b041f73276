//! Any text rendered as a chat template: a rendering or an error, bounded, never a panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tensorscope::engine::fuzz::chat_template(data));
