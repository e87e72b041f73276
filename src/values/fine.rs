//! A histogram's fine buckets (see [`crate::histogram`]): every bucket's count while values are
//! counted; only the counted buckets once a part read in parallel is finished, its table then
//! going back, emptied, to its thread for the thread's next part.
//!
//! A fresh table costs a page fault for each page first touched, and a join read every part's
//! whole table, a fault for each page no value had touched: with four parts a thread, a
//! 2-thread F32 histogram spent an eighth of its time there, most of it after the threads were done.

use super::wire::{Reader, Writer};

/// Fine buckets: one per value of the top 16 bits of an `f32`.
pub const FINE: usize = 1 << 16;

/// A histogram's fine buckets.
#[derive(Clone, Default)]
pub enum Fine {
    /// Nothing counted yet.
    #[default]
    Empty,
    /// Every bucket's count, indexed by key ([`FINE`] of them).
    Dense(Vec<u64>),
    /// The buckets counted, as `(key, count)` in increasing key order, none zero: a finished
    /// part's ([`Fine::release`]), one read from bytes, or one made of counts ([`Fine::of_counts`]).
    Sparse(Vec<(u16, u64)>),
}

thread_local! {
    /// An empty table released by a finished part of this thread, for the thread's next.
    static SPARE: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// An all-zero table: the thread's spare, else a fresh one (its pages faulted as touched).
fn empty_table() -> Vec<u64> {
    let spare = SPARE.take();
    if spare.len() == FINE {
        spare
    } else {
        vec![0; FINE]
    }
}

/// The counts of `table` (at most 65,536 of them) that are not zero, `(index, count)` in index
/// order, each set back to zero as it is taken: eight at a time, skipped when all eight are zero
/// (one vector OR).
pub(crate) fn take_counted<T>(table: &mut [T]) -> Vec<(u16, u64)>
where
    T: Copy + Default + PartialEq + Into<u64> + std::ops::BitOr<Output = T>,
{
    debug_assert!(table.len() <= 1 << 16);
    let zero = T::default();
    let mut counted = Vec::new();
    for (i, eight) in table.chunks_mut(8).enumerate() {
        if eight.iter().fold(zero, |a, &c| a | c) == zero {
            continue;
        }
        for (j, c) in eight.iter_mut().enumerate() {
            if *c != zero {
                counted.push(((8 * i + j) as u16, std::mem::take(c).into()));
            }
        }
    }
    counted
}

impl Fine {
    /// Every bucket's count, to count into: a table is taken on first use, and counted buckets
    /// are spread back into one.
    pub fn dense(&mut self) -> &mut [u64; FINE] {
        if !matches!(self, Fine::Dense(_)) {
            let mut table = empty_table();
            if let Fine::Sparse(counted) = self {
                for &(key, c) in counted.iter() {
                    table[usize::from(key)] = c;
                }
            }
            *self = Fine::Dense(table);
        }
        let Fine::Dense(table) = self else { unreachable!("made dense above") };
        (&mut table[..]).try_into().expect("FINE buckets")
    }

    /// The buckets of `(key, count)` pairs in any order, a key any number of times: kept as
    /// the counted ones (no table) when their keys rise, as a code histogram's do but for signed
    /// integers', else counted into a table (no sort: its code grew each wasm bundle by 2 KB).
    pub fn of_counts(keys: impl Iterator<Item = (u16, u64)>) -> Fine {
        let mut counted: Vec<(u16, u64)> = Vec::new();
        let mut rising = true;
        for (key, c) in keys.filter(|&(_, c)| c != 0) {
            match counted.last_mut() {
                Some((last, n)) if *last == key => *n = n.saturating_add(c),
                Some((last, _)) => {
                    rising &= *last < key;
                    counted.push((key, c));
                }
                None => counted.push((key, c)),
            }
        }
        if !rising {
            let mut fine = Fine::Empty;
            fine.add_counts(counted);
            return fine;
        }
        if counted.is_empty() {
            Fine::Empty
        } else {
            Fine::Sparse(counted)
        }
    }

    /// Keep only the counted buckets, and give the table back to this thread, emptied, for the
    /// next histogram it counts: a part read in parallel is finished.
    pub fn release(&mut self) {
        let Fine::Dense(table) = self else { return };
        let mut table = std::mem::take(table);
        let counted = take_counted(&mut table);
        SPARE.set(table);
        *self = Fine::Sparse(counted);
    }

    /// Add `other`'s counts (taking its table over when this has none).
    pub fn absorb(&mut self, other: Fine) {
        match (&mut *self, other) {
            (_, Fine::Empty) => {}
            (Fine::Empty, dense @ Fine::Dense(_)) => *self = dense,
            (_, Fine::Dense(table)) => {
                for (a, b) in self.dense().iter_mut().zip(&table) {
                    *a += b;
                }
            }
            (_, Fine::Sparse(counted)) => self.add_counts(counted),
        }
    }

    /// Add `(key, count)` pairs, in any order, into the table: counts may come from bytes, any
    /// number: none may wrap or panic.
    fn add_counts(&mut self, counted: Vec<(u16, u64)>) {
        let table = self.dense();
        for (key, c) in counted {
            table[usize::from(key)] = table[usize::from(key)].saturating_add(c);
        }
    }

    /// `each(key, count)` for every counted bucket whose key is in `keys`, in key order.
    pub fn counted_in(&self, keys: std::ops::Range<usize>, mut each: impl FnMut(usize, u64)) {
        match self {
            Fine::Empty => {}
            Fine::Dense(table) => {
                for (key, &c) in table.iter().enumerate().take(keys.end).skip(keys.start) {
                    if c != 0 {
                        each(key, c);
                    }
                }
            }
            Fine::Sparse(counted) => {
                let from = counted.partition_point(|&(k, _)| usize::from(k) < keys.start);
                for &(key, c) in counted[from..].iter().take_while(|&&(k, _)| usize::from(k) < keys.end) {
                    each(usize::from(key), c);
                }
            }
        }
    }

    /// Append to a result's byte form ([`Writer::sparse`]'s, whichever the form held).
    pub fn write(&self, w: &mut Writer) {
        match self {
            Fine::Empty => w.sparse(&[]),
            Fine::Dense(table) => w.sparse(table),
            Fine::Sparse(counted) => write_counted(w, FINE, counted),
        };
    }

    /// Read what [`Fine::write`] wrote: no table, or [`FINE`] buckets.
    pub fn read(r: &mut Reader) -> Option<Fine> {
        match read_counted(r, FINE)? {
            (0, _) => Some(Fine::Empty),
            (FINE, counted) => Some(Fine::Sparse(counted)),
            _ => None,
        }
    }
}

/// Append `counted` (non-zero `(index, count)` entries, by index) to a result's byte form as the
/// entries of a list `len` long ([`Writer::sparse`]'s form).
pub(crate) fn write_counted<'w>(w: &'w mut Writer, len: usize, counted: &[(u16, u64)]) -> &'w mut Writer {
    w.sparse_entries(len, counted.iter().map(|&(k, c)| (usize::from(k), c)))
}

/// Read what [`write_counted`] (or [`Writer::sparse`]) wrote, of a list at most `max_len` long
/// (at most 65,536): its length and its non-zero entries.
pub(crate) fn read_counted(r: &mut Reader, max_len: usize) -> Option<(usize, Vec<(u16, u64)>)> {
    debug_assert!(max_len <= 1 << 16, "indices fit a u16");
    let (len, entries) = r.sparse_entries(max_len)?;
    Some((len, entries.into_iter().filter(|&(_, c)| c != 0).map(|(k, c)| (k as u16, c)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets counted at keys at both ends, in one run and alone.
    const KEYS: [(usize, u64); 6] = [(0, 3), (1, 1), (7, 2), (8, 5), (40_000, 9), (FINE - 1, 4)];

    fn counted() -> Fine {
        let mut f = Fine::Empty;
        for (k, c) in KEYS {
            f.dense()[k] += c;
        }
        f
    }

    fn bytes(f: &Fine) -> Vec<u8> {
        let mut w = Writer::default();
        f.write(&mut w);
        w.0
    }

    #[test]
    fn a_released_table_keeps_its_counts_and_serves_the_thread_s_next_one_empty() {
        let mut f = counted();
        let Fine::Dense(table) = &f else { panic!("counted into a table") };
        let table_at = table.as_ptr();
        f.release();
        let Fine::Sparse(kept) = &f else { panic!("released to the counted buckets") };
        assert_eq!(kept.iter().map(|&(k, c)| (usize::from(k), c)).collect::<Vec<_>>(), KEYS);
        let mut next = Fine::Empty;
        let table = next.dense();
        assert_eq!(table.as_ptr(), table_at, "the thread's spare table");
        assert!(table.iter().all(|&c| c == 0), "emptied");
    }

    #[test]
    fn every_form_writes_the_same_bytes_and_reads_back_the_counts() {
        let dense = counted();
        let mut sparse = counted();
        sparse.release();
        assert_eq!(bytes(&dense), bytes(&sparse));
        let read = Fine::read(&mut Reader(&bytes(&dense))).unwrap();
        assert_eq!(bytes(&read), bytes(&dense));
        assert!(matches!(Fine::read(&mut Reader(&bytes(&Fine::Empty))), Some(Fine::Empty)));
        let mut keys = Vec::new();
        read.counted_in(7..40_001, |k, c| keys.push((k, c)));
        assert_eq!(keys, KEYS[2..5]);
    }

    #[test]
    fn parts_in_any_form_add_up() {
        let mut sparse = counted();
        sparse.release();
        let mut all = Fine::Empty;
        for part in [counted(), Fine::Empty, sparse, counted()] {
            all.absorb(part);
        }
        let mut got = Vec::new();
        all.counted_in(0..FINE, |k, c| got.push((k, c)));
        assert_eq!(got, KEYS.map(|(k, c)| (k, 3 * c)));
    }

    #[test]
    fn counts_from_bytes_add_up_without_wrapping() {
        let mut w = Writer::default();
        w.sparse_entries(FINE, [(5, u64::MAX - 1)].into_iter());
        let mut all = Fine::Empty;
        for _ in 0..2 {
            all.absorb(Fine::read(&mut Reader(&w.0)).unwrap());
        }
        let mut got = Vec::new();
        all.counted_in(0..FINE, |k, c| got.push((k, c)));
        assert_eq!(got, [(5, u64::MAX)]);
    }

    /// Buckets given in any order, a key any number of times, some counted none, hold each
    /// key's counts added (held at the largest count): kept as the counted ones when the keys
    /// rise.
    #[test]
    fn buckets_of_counts_in_any_order_hold_each_key_s_counts() {
        let counted = |f: &Fine| {
            let mut got = Vec::new();
            f.counted_in(0..FINE, |k, c| got.push((k, c)));
            got
        };
        let rising = Fine::of_counts([(0, 3), (0, 1), (7, 2), (8, 0), (8, 5), (u16::MAX, 4)].into_iter());
        assert!(matches!(rising, Fine::Sparse(_)), "no table for rising keys");
        assert_eq!(counted(&rising), [(0, 4), (7, 2), (8, 5), (FINE - 1, 4)]);
        let falling = Fine::of_counts([(9, 1), (9, 2), (4, 1), (0, 0), (9, u64::MAX), (2, 6), (4, 3)].into_iter());
        assert_eq!(counted(&falling), [(2, 6), (4, 4), (9, u64::MAX)]);
        let mut w = Writer::default();
        falling.write(&mut w);
        assert_eq!(counted(&Fine::read(&mut Reader(&w.0)).unwrap()), [(2, 6), (4, 4), (9, u64::MAX)]);
        assert!(matches!(Fine::of_counts([(5, 0)].into_iter()), Fine::Empty));
    }

    #[test]
    fn malformed_bytes_are_refused() {
        let entries = |len: u64, e: &[(u64, u64)]| {
            let mut w = Writer::default();
            w.u64(len).u64(e.len() as u64);
            for &(k, c) in e {
                w.u64(k).u64(c);
            }
            w.0
        };
        let fine = FINE as u64;
        assert!(Fine::read(&mut Reader(&entries(fine, &[(3, 1), (9, 2)]))).is_some());
        for (what, b) in [
            ("out of order", entries(fine, &[(9, 1), (3, 2)])),
            ("twice", entries(fine, &[(3, 1), (3, 2)])),
            ("past the end", entries(fine, &[(fine, 1)])),
            ("another length", entries(10, &[(3, 1)])),
            ("more than the bytes hold", entries(fine, &[(3, 1)])[..24].to_vec()),
        ] {
            assert!(Fine::read(&mut Reader(&b)).is_none(), "{what}");
        }
    }
}
