//! The one read planner every driver uses: turns a job's needs into bounded reads, serves needs
//! from bytes already read, and refuses reads past the end of a file.

use super::{Job, JobStep, Need};
use crate::range::ByteRange;
use crate::step::FeedError;

/// How reads are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOpts {
    /// Largest read issued for a need (a job's read-ahead may make one larger).
    pub chunk: u64,
    /// Upper bound on a job's read-ahead.
    pub max_read_ahead: u64,
    /// Largest piece of a read handed to the job at once: a browser's main thread reads big
    /// and feeds small, yielding between pieces (a feed is parsed in one step).
    pub max_feed: u64,
}

impl Default for ReadOpts {
    fn default() -> Self {
        ReadOpts { chunk: crate::step::CHUNK_BYTES, max_read_ahead: 8 << 20, max_feed: u64::MAX }
    }
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The driver's read failed (its message).
    Read(String),
    /// A need runs past the end of the file (the file is shorter than the job was told).
    PastEnd { file: usize, needed: u64, len: u64 },
    /// A read returned other than the bytes asked: the file changed while open.
    ShortRead { file: usize, range: ByteRange, got: u64 },
    /// The job asked for a file it was not given.
    NoSuchFile(usize),
    /// Bytes were fed where the job did not ask (a driver bug).
    Feed(FeedError),
    /// The driver stopped the run.
    Cancelled,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Read(e) => write!(f, "read failed: {e}"),
            RunError::PastEnd { needed, len, .. } => {
                write!(f, "the file ends at byte {len} before the data needed (up to byte {needed})")
            }
            RunError::ShortRead { range, got, .. } => write!(
                f,
                "reading bytes {range} returned {got} bytes: the file changed (or shrank) since it was opened"
            ),
            RunError::NoSuchFile(i) => write!(f, "file {i} is not open"),
            RunError::Feed(e) => write!(f, "{e}"),
            RunError::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl std::error::Error for RunError {}

/// What the driver should do next.
#[derive(Debug, PartialEq)]
pub enum Poll<T> {
    /// Read exactly these bytes of this file and hand them to [`Runner::fill`].
    Read(usize, ByteRange),
    /// Bytes were fed (a need's part, when [`ReadOpts::max_feed`] cuts it): a good moment to
    /// report progress, yield or cancel; then poll again.
    Fed,
    Done(T),
}

/// Runs a job over files of known lengths (indexed as the job indexes them).
pub struct Runner<J> {
    job: J,
    lens: Vec<u64>,
    opts: ReadOpts,
    pending: Option<Need>,
    /// Bytes read and not yet fed: file, absolute start, bytes.
    buf: Option<(usize, u64, Vec<u8>)>,
    /// An allocation for the first read.
    spare: Vec<u8>,
}

impl<J: Job> Runner<J> {
    /// A runner of `job` over files of `lens` bytes.
    pub fn new(job: J, lens: Vec<u64>) -> Self {
        Runner::with_opts(job, lens, ReadOpts::default())
    }

    pub fn with_opts(job: J, lens: Vec<u64>, opts: ReadOpts) -> Self {
        Runner { job, lens, opts, pending: None, buf: None, spare: Vec::new() }
    }

    /// Read into `buf`'s allocation first (a buffer an earlier run gave back with
    /// [`Runner::take_buffer`]), not a new one.
    pub fn with_buffer(mut self, buf: Vec<u8>) -> Self {
        self.spare = buf;
        self
    }

    /// The read buffer, to reuse in another run; this run's bytes read are dropped.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.buf.take().map_or_else(|| std::mem::take(&mut self.spare), |(_, _, b)| b)
    }

    /// The job, as far as it has got.
    pub fn job(&self) -> &J {
        &self.job
    }

    /// The job, to drain output as it goes.
    pub fn job_mut(&mut self) -> &mut J {
        &mut self.job
    }

    /// The next thing to do.
    pub fn poll(&mut self) -> Result<Poll<J::Output>, RunError> {
        let need = match self.pending {
            Some(n) => n,
            None => match self.job.step() {
                JobStep::Done(out) => return Ok(Poll::Done(out)),
                JobStep::Need(n) => {
                    check_need(&n, &self.lens)?;
                    self.pending = Some(n);
                    n
                }
            },
        };
        if let Some((file, start, bytes)) = &self.buf {
            let end = start + bytes.len() as u64;
            if *file == need.file && *start <= need.range.start && need.range.start < end {
                let from = (need.range.start - start) as usize; // < bytes.len(), a usize
                let to =
                    need.range.end.min(end).min(need.range.start.saturating_add(self.opts.max_feed.max(1))) - start;
                self.job.feed(need.file, need.range.start, &bytes[from..to as usize]).map_err(RunError::Feed)?;
                self.pending = None;
                return Ok(Poll::Fed);
            }
        }
        let len = self.lens[need.file];
        let asked = need.range.len().min(self.opts.chunk.max(1));
        // Read ahead a whole number of needs, so a job stepping through equal pieces (a scan's
        // blocks) is fed each one whole from the buffer rather than split across two reads.
        let ahead = self.job.read_ahead().min(self.opts.max_read_ahead);
        let ahead = if ahead > asked { ahead / asked * asked } else { ahead };
        let want = asked.max(ahead).min(len - need.range.start);
        Ok(Poll::Read(need.file, ByteRange::at(need.range.start, want)))
    }

    /// The read a job reading sequentially will ask for once the bytes it was last handed are
    /// used up, for a driver to start while the job works on these: the next bytes of the same
    /// length, never past the job's end or the file's. `None` for a job that does not read ahead.
    /// Bytes read early are handed over with [`Runner::fill`] like any others (only their range
    /// need match: the job is fed from them if its next need starts there).
    pub fn next_read(&self) -> Option<(usize, ByteRange)> {
        let need = self.pending?;
        let (file, start, bytes) = self.buf.as_ref()?;
        if *file != need.file || self.job.read_ahead() == 0 {
            return None;
        }
        let p = self.job.progress();
        let job_end = need.range.start.checked_add(p.total.saturating_sub(p.done))?;
        let from = start + bytes.len() as u64;
        let to = from.saturating_add(bytes.len() as u64).min(job_end).min(self.lens[need.file]);
        (from < to).then(|| (need.file, ByteRange::new(from, to)))
    }

    /// Hand over the bytes of a [`Poll::Read`].
    pub fn fill(&mut self, file: usize, range: ByteRange, bytes: Vec<u8>) -> Result<(), RunError> {
        if bytes.len() as u64 != range.len() {
            return Err(RunError::ShortRead { file, range, got: bytes.len() as u64 });
        }
        self.buf = Some((file, range.start, bytes));
        Ok(())
    }

    /// Hand over the bytes of a [`Poll::Read`] by reading them into the buffer the last read
    /// used: `read(buf)` gets it holding that read's bytes and leaves it holding exactly this
    /// read's.
    pub fn fill_with(
        &mut self,
        file: usize,
        range: ByteRange,
        read: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
    ) -> Result<(), RunError> {
        let mut bytes = self.take_buffer();
        read(&mut bytes).map_err(RunError::Read)?;
        self.fill(file, range, bytes)
    }
}

/// Whether `need` lies within a file of `lens`.
fn check_need(need: &Need, lens: &[u64]) -> Result<(), RunError> {
    let len = *lens.get(need.file).ok_or(RunError::NoSuchFile(need.file))?;
    if need.range.end > len || need.range.is_empty() {
        return Err(RunError::PastEnd { file: need.file, needed: need.range.end, len });
    }
    Ok(())
}

/// Bytes a driver lends where they lie (a file mapped into memory, say), not read into a buffer.
pub trait InPlace {
    /// The bytes of `range` of file `file`, or at least their first (for a source that reads
    /// them after all).
    fn bytes(&mut self, file: usize, range: ByteRange) -> Result<&[u8], String>;
}

/// Run `job` over files of `lens` bytes that `src` lends in place: each need is fed as `src`
/// lends it (whole, from a mapped file), with no copy and no read-ahead; `drain(job)` after
/// every feed.
pub fn run_in_place<J: Job>(
    mut job: J,
    lens: &[u64],
    src: &mut impl InPlace,
    mut drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, RunError> {
    loop {
        let need = match job.step() {
            JobStep::Done(out) => return Ok(out),
            JobStep::Need(n) => n,
        };
        check_need(&need, lens)?;
        let bytes = src.bytes(need.file, need.range).map_err(RunError::Read)?;
        if bytes.is_empty() || bytes.len() as u64 > need.range.len() {
            return Err(RunError::ShortRead { file: need.file, range: need.range, got: bytes.len() as u64 });
        }
        job.feed(need.file, need.range.start, bytes).map_err(RunError::Feed)?;
        drain(&mut job).map_err(RunError::Read)?;
    }
}

/// Run `job` to completion over files of `lens` bytes, reading through `read(file, range, buf)`,
/// which leaves `buf` holding exactly the bytes of `range` (it is handed the previous read's
/// buffer, to reuse).
pub fn run<J: Job>(
    job: J,
    lens: Vec<u64>,
    read: impl FnMut(usize, ByteRange, &mut Vec<u8>) -> Result<(), String>,
) -> Result<J::Output, RunError> {
    run_draining(job, lens, read, |_| Ok(()))
}

/// [`run`], with `drain(job)` after every feed (to write a job's output out as it goes).
pub fn run_draining<J: Job>(
    job: J,
    lens: Vec<u64>,
    read: impl FnMut(usize, ByteRange, &mut Vec<u8>) -> Result<(), String>,
    drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, RunError> {
    run_reusing(job, lens, ReadOpts::default(), &mut Vec::new(), read, drain)
}

/// [`run_draining`], its reads cut as `opts` says and made into `buf`'s allocation (left holding
/// the last read's, for the next run to reuse).
pub fn run_reusing<J: Job>(
    job: J,
    lens: Vec<u64>,
    opts: ReadOpts,
    buf: &mut Vec<u8>,
    mut read: impl FnMut(usize, ByteRange, &mut Vec<u8>) -> Result<(), String>,
    mut drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, RunError> {
    let mut r = Runner::with_opts(job, lens, opts).with_buffer(std::mem::take(buf));
    let out = loop {
        match r.poll() {
            Ok(Poll::Read(file, range)) => {
                if let Err(e) = r.fill_with(file, range, |b| read(file, range, b)) {
                    break Err(e);
                }
            }
            Ok(Poll::Fed) => {
                if let Err(e) = drain(r.job_mut()) {
                    break Err(RunError::Read(e));
                }
            }
            Ok(Poll::Done(out)) => break Ok(out),
            Err(e) => break Err(e),
        }
    };
    *buf = r.take_buffer();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobStep, Progress};

    /// Collects bytes `want` of file 1, asking in pieces of `step` bytes, reading ahead `ahead`.
    struct Collect {
        want: ByteRange,
        step: u64,
        ahead: u64,
        got: Vec<u8>,
    }

    impl Job for Collect {
        type Output = Vec<u8>;
        fn step(&mut self) -> JobStep<Vec<u8>> {
            let at = self.want.start + self.got.len() as u64;
            if at >= self.want.end {
                return JobStep::Done(std::mem::take(&mut self.got));
            }
            JobStep::Need(Need { file: 1, range: ByteRange::new(at, (at + self.step).min(self.want.end)) })
        }
        fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
            assert_eq!((file, offset), (1, self.want.start + self.got.len() as u64));
            let room = (self.want.end - offset) as usize;
            self.got.extend_from_slice(&bytes[..bytes.len().min(room)]);
            Ok(())
        }
        fn progress(&self) -> Progress {
            Progress { done: self.got.len() as u64, total: self.want.len() }
        }
        fn read_ahead(&self) -> u64 {
            self.ahead
        }
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn reads_are_chunked_served_from_read_ahead_and_exact() {
        let file = data(100_000);
        for (step, ahead) in [(1, 0), (7, 0), (1000, 4096), (5000, 1 << 20), (1 << 30, 0)] {
            let job = Collect { want: ByteRange::new(123, 99_999), step, ahead, got: vec![] };
            let mut reads = 0;
            let out = run(job, vec![0, file.len() as u64], |f, r, buf| {
                assert_eq!(f, 1);
                assert!(r.end <= file.len() as u64);
                reads += 1;
                buf.clear();
                buf.extend_from_slice(&file[r.start as usize..r.end as usize]);
                Ok(())
            })
            .unwrap();
            assert_eq!(out, &file[123..99_999], "step {step} ahead {ahead}");
            if ahead >= 4096 {
                assert!(reads <= 99_999 / 4096 + 2, "read-ahead serves later needs: {reads} reads");
            }
        }
    }

    /// A job stepping through equal pieces is fed every piece whole: the read-ahead is a whole
    /// number of pieces, so no piece straddles two reads.
    #[test]
    fn read_ahead_is_a_whole_number_of_needs() {
        let file = data(100_000);
        for (step, ahead) in [(1000, 4096), (999, 8192), (4096, 10_000), (3000, 2000)] {
            let job = Collect { want: ByteRange::new(123, 99_999), step, ahead, got: vec![] };
            let mut r = Runner::new(job, vec![0, file.len() as u64]);
            let mut fed = 0;
            let out = loop {
                match r.poll().unwrap() {
                    Poll::Read(f, range) => {
                        assert_eq!((range.start - 123) % step, 0, "step {step}: read {range:?} starts a piece");
                        assert!(
                            range.len() % step == 0 || range.end == file.len() as u64,
                            "step {step} ahead {ahead}: read {range:?} is whole pieces"
                        );
                        r.fill(f, range, file[range.start as usize..range.end as usize].to_vec()).unwrap();
                    }
                    Poll::Fed => {
                        let got = r.job().got.len() as u64;
                        assert!(got - fed == step || got == 99_999 - 123, "step {step}: a feed of {}", got - fed);
                        fed = got;
                    }
                    Poll::Done(out) => break out,
                }
            };
            assert_eq!(out, &file[123..99_999]);
        }
    }

    /// A driver that starts each next read early, as `next_read` says, is asked for nothing
    /// else after the first read, and reads no byte past the job's end.
    #[test]
    fn next_read_is_the_read_a_sequential_job_asks_for_next() {
        let file = data(100_000);
        for (step, ahead) in [(1000, 4096), (999, 8192), (7, 100)] {
            let job = Collect { want: ByteRange::new(123, 99_999), step, ahead, got: vec![] };
            let mut r = Runner::new(job, vec![0, file.len() as u64]);
            let (mut early, mut asked, mut read): (Option<(usize, ByteRange)>, u32, u64) = (None, 0, 0);
            let out = loop {
                match r.poll().unwrap() {
                    Poll::Read(f, range) => {
                        let got = match early.take() {
                            Some((ef, er)) if ef == f && er.start == range.start => er,
                            _ => {
                                asked += 1;
                                range
                            }
                        };
                        read += got.len();
                        r.fill(f, got, file[got.start as usize..got.end as usize].to_vec()).unwrap();
                        early = r.next_read();
                        if let Some((_, er)) = early {
                            assert!(er.end <= 99_999, "step {step}: {er:?} reads past the job");
                        }
                    }
                    Poll::Fed => {}
                    Poll::Done(out) => break out,
                }
            };
            assert_eq!(out, &file[123..99_999]);
            assert_eq!((asked, read), (1, 99_999 - 123), "step {step} ahead {ahead}");
        }
        let job = Collect { want: ByteRange::new(0, 10_000), step: 1000, ahead: 0, got: vec![] };
        let mut r = Runner::new(job, vec![0, file.len() as u64]);
        let Poll::Read(f, range) = r.poll().unwrap() else { panic!("a read first") };
        r.fill(f, range, file[..range.end as usize].to_vec()).unwrap();
        assert_eq!(r.next_read(), None, "no read-ahead, no early read");
    }

    /// Reads as big as the need, fed to the job at most `max_feed` bytes at a time.
    #[test]
    fn big_reads_are_fed_in_pieces() {
        let file = data(100_000);
        let job = Collect { want: ByteRange::new(10, 90_010), step: 1 << 30, ahead: 0, got: vec![] };
        let opts = ReadOpts { chunk: 1 << 20, max_feed: 4096, ..ReadOpts::default() };
        let mut r = Runner::with_opts(job, vec![0, file.len() as u64], opts);
        let (mut reads, mut feeds) = (0, 0);
        let out = loop {
            match r.poll().unwrap() {
                Poll::Read(f, range) => {
                    reads += 1;
                    r.fill(f, range, file[range.start as usize..range.end as usize].to_vec()).unwrap();
                }
                Poll::Fed => {
                    feeds += 1;
                    assert!(r.job().got.len() <= feeds * 4096, "no piece over max_feed");
                }
                Poll::Done(out) => break out,
            }
        };
        assert_eq!(out, &file[10..90_010]);
        assert_eq!((reads, feeds), (1, 90_000usize.div_ceil(4096)));
    }

    #[test]
    fn needs_past_the_end_and_short_reads_are_errors() {
        let job = Collect { want: ByteRange::new(0, 10), step: 10, ahead: 0, got: vec![] };
        assert_eq!(run(job, vec![0, 5], |_, _, _| Ok(())), Err(RunError::PastEnd { file: 1, needed: 10, len: 5 }));
        let job = Collect { want: ByteRange::new(0, 10), step: 10, ahead: 0, got: vec![] };
        assert!(matches!(
            run(job, vec![0, 10], |_, _, buf| {
                *buf = vec![1, 2];
                Ok(())
            }),
            Err(RunError::ShortRead { got: 2, .. })
        ));
        let job = Collect { want: ByteRange::new(0, 10), step: 10, ahead: 0, got: vec![] };
        assert_eq!(run(job, vec![0], |_, _, _| Ok(())), Err(RunError::NoSuchFile(1)));
        let job = Collect { want: ByteRange::new(0, 10), step: 10, ahead: 0, got: vec![] };
        assert_eq!(
            run(job, vec![0, 10], |_, _, _| Err("disk on fire".into())),
            Err(RunError::Read("disk on fire".into()))
        );
    }

    #[test]
    fn offsets_past_4_gib_stay_u64() {
        let base = 5u64 << 30;
        let job = Collect { want: ByteRange::new(base + 3, base + 9), step: 2, ahead: 1 << 20, got: vec![] };
        let out = run(job, vec![0, base + 100], |_, r, buf| {
            assert!(r.start >= base && r.end <= base + 100);
            *buf = (r.start..r.end).map(|o| (o - base) as u8).collect();
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec![3, 4, 5, 6, 7, 8]);
    }

    /// File 1 of `file`'s bytes, lent whole or `most` bytes at a time.
    struct Lend {
        file: Vec<u8>,
        most: usize,
    }

    impl InPlace for Lend {
        fn bytes(&mut self, file: usize, range: ByteRange) -> Result<&[u8], String> {
            assert_eq!(file, 1);
            let (start, end) = (range.start as usize, range.end as usize);
            Ok(&self.file[start..end.min(start.saturating_add(self.most))])
        }
    }

    #[test]
    fn bytes_lent_in_place_are_fed_whole_or_in_parts() {
        let file = data(100_000);
        for (step, most) in [(1, usize::MAX), (5000, usize::MAX), (5000, 333), (1 << 30, 4096)] {
            let job = Collect { want: ByteRange::new(123, 99_999), step, ahead: 0, got: vec![] };
            let mut src = Lend { file: file.clone(), most };
            let mut feeds = 0;
            let got = run_in_place(job, &[0, 100_000], &mut src, |_| {
                feeds += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(got, file[123..99_999], "step {step}, most {most}");
            // A need lent in part is asked again from where the part ended.
            let fed_at_once = step.min(most as u64);
            assert_eq!(feeds, (99_999 - 123u64).div_ceil(fed_at_once), "step {step}, most {most}");
        }
    }

    #[test]
    fn needs_lent_in_place_outside_the_files_or_lent_short_are_errors() {
        let run = |want: ByteRange, lens: &[u64], most: usize| {
            let job = Collect { want, step: 10, ahead: 0, got: vec![] };
            run_in_place(job, lens, &mut Lend { file: data(100), most }, |_| Ok(()))
        };
        // The first need (90..100) is fed; the next runs past the end.
        assert_eq!(
            run(ByteRange::new(90, 120), &[0, 100], 100),
            Err(RunError::PastEnd { file: 1, needed: 110, len: 100 })
        );
        assert_eq!(run(ByteRange::new(0, 10), &[0], 100), Err(RunError::NoSuchFile(1)));
        assert_eq!(
            run(ByteRange::new(0, 10), &[0, 100], 0),
            Err(RunError::ShortRead { file: 1, range: ByteRange::new(0, 10), got: 0 })
        );
        let stopped = run_in_place(
            Collect { want: ByteRange::new(0, 50), step: 10, ahead: 0, got: vec![] },
            &[0, 100],
            &mut Lend { file: data(100), most: 100 },
            |_| Err("stop".into()),
        );
        assert_eq!(stopped, Err(RunError::Read("stop".into())));
    }
}
