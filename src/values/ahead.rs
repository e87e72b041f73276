//! Cache lines asked for ahead of loops that read the page cache's bytes a few at a time (the
//! histograms' bucket loop, code counting, the five-bit code counter).

/// Whether [`fetch_ahead`] asks for anything on this target (elsewhere, code that differs only
/// by it is better not compiled twice).
pub const FETCHES_AHEAD: bool = cfg!(target_arch = "x86_64");

/// Ask for the cache lines 2 KiB past those of `run`, on CPUs with a prefetch instruction: for
/// loops that take values read where they lie a few at a time with scalar loads, which would
/// otherwise each wait on the page cache's bytes (1-4 KiB ahead measured alike, 512 B less).
/// Past the end of the values is harmless: a prefetch never faults.
#[inline(always)]
pub(crate) fn fetch_ahead<T>(run: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const AHEAD_BYTES: usize = 2048;
        let ahead = run.as_ptr().cast::<i8>().wrapping_add(AHEAD_BYTES);
        for line in 0..std::mem::size_of_val(run).div_ceil(64) {
            // SAFETY: SSE is in every x86-64 CPU, and a prefetch reads nothing: any address will do.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64 * line)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = run;
}
