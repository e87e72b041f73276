//! Benchmark input shared by the native and the wasm decode benchmarks.

use tensorscope::engine::decode::BlockCodec;

/// `bytes` of deterministic whole blocks whose f16 fields are finite, so scales look real.
pub fn blocks(codec: &BlockCodec, bytes: usize) -> Vec<u8> {
    let n = bytes / codec.block_bytes * codec.block_bytes;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut b: Vec<u8> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    // Keep every byte pair's high byte below 0x7c: f16 fields stay finite.
    for pair in b.chunks_exact_mut(2) {
        pair[1] &= 0x3b;
    }
    b
}
