//! Progress bars for long work (hashing, scanning, whole-tensor histograms, exports): bytes,
//! bytes per second and time left, on stderr; only on a terminal, never with `--json` or
//! `--quiet`, so scripts and CI logs see the same output as before.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressStyle};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turn bars on for this run when stderr is a terminal and neither `--json` nor `--quiet`.
pub fn enable(json: bool, quiet: bool) {
    ENABLED.store(!json && !quiet && std::io::stderr().is_terminal(), Ordering::Relaxed);
}

/// A bar over `total` bytes, or nothing when bars are off or the work is small.
pub struct Bar(Option<ProgressBar>);

impl Bar {
    pub fn new(total: u64, what: &str) -> Bar {
        if !ENABLED.load(Ordering::Relaxed) || total < (64 << 20) {
            return Bar(None);
        }
        let bar = ProgressBar::new(total);
        let style =
            ProgressStyle::with_template("{msg} [{bar:32}] {bytes}/{total_bytes} {binary_bytes_per_sec}, {eta} left")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(what.to_owned());
        Bar(Some(bar))
    }

    /// `n` more bytes done.
    pub fn add(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
