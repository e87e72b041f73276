//! Blocks merged by scale before they are counted: blocks with the same scale and no offset have
//! the same values per code, so their counts can be added and the values binned once for all of
//! them ([`ByScale`]).
//!
//! A block's scale is one `f16` (or an `E8M0` byte) taken from the data: a 1 MiB piece of a real
//! tensor's 30,000-60,000 blocks holds a few hundred to a few thousand distinct scales, so most
//! blocks cost an add of sixteen counts instead of sixteen bucket updates and their statistics.
//!
//! The decoders merge the blocks as they count them ([`super::groups::MergedFn`]): each block's
//! counts go from the registers they were counted in straight to the slot its scale's stored
//! bits name, unconverted. (Stored first as groups, their scales converted, checked and turned
//! back into bits, Q4_0 took 1.6x as long.) A block of 32 codes under one scale (Q5_0) is two
//! groups, its codes `0..16` and `16..32`, merged as one item of two halves (`ByScale<2>`).

use super::groups::Group;

/// Items ahead of the one being merged whose slot is fetched into the cache.
pub(super) const AHEAD: usize = 8;

/// Slots of the table: one for every `f16` bit pattern.
const SLOTS: usize = 1 << 16;

/// Items a slot merges before it is emptied: an item holds at most 256 elements, so no count
/// passes `u16::MAX`.
const SLOT_ITEMS: u16 = 255;

/// A slot's scale from its key (the scale's stored bits).
pub type ScaleOf = fn(u16) -> f32;

/// What a merger's items are: the halves' tables, and the scale each key stands for.
#[derive(Clone, Copy)]
pub struct Kind<const H: usize> {
    tables: [&'static [f32; 16]; H],
    scale_of: ScaleOf,
}

impl<const H: usize> Kind<H> {
    fn is(&self, other: &Kind<H>) -> bool {
        self.tables.iter().zip(other.tables).all(|(a, b)| std::ptr::eq(*a, b))
            && std::ptr::fn_addr_eq(self.scale_of, other.scale_of)
    }
}

/// Slots by key, a slot per 16-bit key: each scale's merged counts, per half, and the items
/// merged into it since it was emptied (a slot of no items holds stale counts). The slots are
/// allocated zeroed, a page touched only where keys fall; the items' 128 KiB are written through
/// at once, as they are read before they are written (see [`ByScale::merge`]). (Slots are not
/// aligned to cache lines: a two-half slot on a line of its own measured alike.)
type Table<const H: usize> = (Vec<[[u16; 16]; H]>, Vec<u16>);

/// What a merger keeps between pieces, empty: its table, its list of taken slots and its
/// merged groups (a piece's groups: a megabyte of them on Q5_0, grown anew by each merger took
/// 800 page faults a thread).
type Spared<const H: usize> = (Table<H>, Vec<u16>, Vec<Group>);

/// Counts merged by scale, for items of `H` groups (one block's: `H` halves of its codes, of one
/// scale and no offset). The table has a slot per key, indexed by it: no hashing, no probing, and
/// a tensor's scales, which lie close together, fall in a few chunks of it (a hashed table of
/// keys measured 0.8x on Q5_0, its slots missing the cache).
pub struct ByScale<const H: usize = 1> {
    table: Table<H>,
    /// The slots taken, in the order they were taken.
    taken: Vec<u16>,
    /// What the taken slots hold.
    kind: Option<Kind<H>>,
    /// Merged groups to count.
    out: Vec<Group>,
}

impl<const H: usize> std::fmt::Debug for ByScale<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByScale").field("taken", &self.taken.len()).finish_non_exhaustive()
    }
}

thread_local! {
    /// What a merger of this thread released, empty, for the thread's next: the table's touched
    /// pages cost a fault each, and a whole tensor's parts each make a merger (the faults were
    /// 4% of a 2-thread TQ2_0 histogram). A `Spared<H>` of the last merger's `H`.
    static SPARE: std::cell::Cell<Option<Box<dyn std::any::Any>>> = const { std::cell::Cell::new(None) };
}

impl<const H: usize> Default for ByScale<H> {
    /// A merger with no table yet (it takes one with its first items).
    fn default() -> Self {
        ByScale { table: (Vec::new(), Vec::new()), taken: Vec::new(), kind: None, out: Vec::new() }
    }
}

impl<const H: usize> ByScale<H> {
    /// Ready to merge items of `tables`, key `k` standing for scale `scale_of(k)`: the kind to
    /// pass to [`ByScale::merge`]. Items merged before, of another kind, are moved to the merged
    /// groups first.
    #[inline(always)]
    pub(super) fn begin(&mut self, tables: &'static [[f32; 16]; H], scale_of: ScaleOf) -> Kind<H> {
        self.take_table();
        let theirs = Kind { tables: std::array::from_fn(|i| &tables[i]), scale_of };
        if self.kind.is_some_and(|ours| !ours.is(&theirs)) {
            self.empty();
        }
        self.kind = Some(theirs);
        theirs
    }

    /// The thread's spare table, or a new one, unless this merger has one.
    #[inline(always)]
    fn take_table(&mut self) {
        if self.table.0.is_empty() {
            let spare = SPARE.take().and_then(|s| s.downcast::<Spared<H>>().ok());
            (self.table, self.taken, self.out) = spare.map(|s| *s).unwrap_or_default();
            if self.table.0.is_empty() {
                self.table = (vec![[[0; 16]; H]; SLOTS], written_zeros(SLOTS));
            }
        }
    }

    /// Add an item's `counts` to the slot of key `k` (`kind` as [`ByScale::begin`] gave it).
    #[inline(always)]
    pub(super) fn merge(&mut self, k: usize, counts: [[u16; 16]; H], kind: Kind<H>) {
        let items = &mut self.table.1[k];
        let slot = &mut self.table.0[k];
        if *items == 0 {
            // Written, not added to: an empty slot's counts are stale. So a page of slots is
            // first touched by a write, and the kernel gives it a page of its own at once. (Read
            // first, it is mapped to the shared zero page, then copied on the write, and the
            // copy flushes every other core's TLB: 300 interrupts stalled a 2-thread Q4_0
            // histogram by 3 ms of its threads' time.)
            *slot = counts;
            self.taken.push(k as u16);
        } else {
            for (slot, counts) in slot.iter_mut().zip(&counts) {
                for (c, &n) in slot.iter_mut().zip(counts) {
                    *c += n;
                }
            }
        }
        *items += 1;
        if *items == SLOT_ITEMS {
            // Emptied now; still listed as taken, it is passed over there unless taken again.
            *items = 0;
            push_groups(&mut self.out, k, *slot, kind);
        }
    }

    /// Start fetching the slot of key `k` into the cache (on x86-64: slots miss it, a 64 MiB
    /// tensor's bytes passing through between a scale's blocks).
    #[inline(always)]
    pub(super) fn prefetch(&self, k: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot: *const [[u16; 16]; H] = &self.table.0[k];
            // SAFETY: a prefetch of a slot of the table (it reads nothing).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = k;
    }

    /// Hand every merged group to `count`, and empty the table.
    pub fn count_with(&mut self, count: impl FnOnce(&[Group])) {
        self.empty();
        count(&self.out);
        self.out.clear();
    }

    /// Give the table back to the thread, for its next merger, once no more items will come
    /// (what was merged and not counted is dropped).
    pub fn release(&mut self) {
        self.empty();
        self.out.clear();
        if !self.table.0.is_empty() {
            let spared: Spared<H> =
                (std::mem::take(&mut self.table), std::mem::take(&mut self.taken), std::mem::take(&mut self.out));
            SPARE.set(Some(Box::new(spared)));
        }
    }

    /// Move every taken slot into the merged groups.
    fn empty(&mut self) {
        let Some(kind) = self.kind else { return };
        for &k in &self.taken {
            let k = usize::from(k);
            if std::mem::take(&mut self.table.1[k]) == 0 {
                continue;
            }
            push_groups(&mut self.out, k, self.table.0[k], kind);
        }
        self.taken.clear();
    }
}

/// `n` zeros, every page of them written: a page of fresh zeros read before it is written is
/// mapped to the kernel's shared zero page, then copied on the write, and the copy flushes every
/// other core's TLB (see [`ByScale::merge`]). (Tables whose pages are mostly touched, a fine
/// histogram's or a code count's, measured slower written through: they fault in every page.)
fn written_zeros(n: usize) -> Vec<u16> {
    let mut zeros = vec![0u16; n];
    /// `u16`s in the smallest page of the CPUs we run on.
    const PAGE: usize = 4096 / 2;
    for i in (0..n).step_by(PAGE) {
        // SAFETY: `i < n`; volatile, the write is not dropped as a store of what the zeroed
        // allocation already holds.
        unsafe { std::ptr::write_volatile(zeros.as_mut_ptr().add(i), 0) };
    }
    zeros
}

/// Append the merged `counts` of key `k` to `out` as groups of `kind`'s tables, under the scale
/// the key stands for and no offset.
fn push_groups<const H: usize>(out: &mut Vec<Group>, k: usize, counts: [[u16; 16]; H], kind: Kind<H>) {
    let a = (kind.scale_of)(k as u16);
    for (table, counts) in kind.tables.into_iter().zip(counts) {
        out.push(Group::new(a, -0.0, table, counts));
    }
}

#[cfg(test)]
mod tests {
    use super::super::f16_to_f32;
    use super::*;
    use std::collections::BTreeMap;

    static TABLES: [[f32; 16]; 2] = [
        [-8., -7., -6., -5., -4., -3., -2., -1., 0., 1., 2., 3., 4., 5., 6., 7.],
        [-1., 0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14.],
    ];
    static FIRST: [[f32; 16]; 1] = [TABLES[0]];
    static SECOND: [[f32; 16]; 1] = [TABLES[1]];

    const NO_OFFSET: f32 = -0.0;

    /// `n` items of `H` halves, 32 elements an item, over `keys` distinct `f16` scales' bits (of
    /// both signs, some not normal: zero, subnormal, infinite, NaN): `(bits, counts)`.
    fn items<const H: usize>(n: usize, keys: u32, seed: &mut u64) -> Vec<(u16, [[u16; 16]; H])> {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let unusual = [0x0000, 0x8000, 0x0001, 0x83ff, 0x7c00, 0xfc00, 0x7e00, 0x0400, 0x7bff];
        (0..n)
            .map(|_| {
                let k = (next() % u64::from(keys)) as u16;
                // Distinct keys, normal values of both signs (`keys` below 14,000), a few unusual.
                let bits = if k % 97 == 5 {
                    unusual[usize::from(k) % unusual.len()]
                } else {
                    (0x1000 + 2 * k) | (k & 1) << 15
                };
                let mut counts = [[0u16; 16]; H];
                for _ in 0..32 {
                    counts[(next() % H as u64) as usize][(next() % 16) as usize] += 1;
                }
                (bits, counts)
            })
            .collect()
    }

    /// The items as groups of `tables`, unmerged.
    fn as_groups<const H: usize>(items: &[(u16, [[u16; 16]; H])], tables: &'static [[f32; 16]; H]) -> Vec<Group> {
        let group = |&(bits, counts): &(u16, [[u16; 16]; H])| {
            std::array::from_fn::<_, H, _>(|i| Group::new(f16_to_f32(bits), NO_OFFSET, &tables[i], counts[i]))
        };
        items.iter().flat_map(group).collect()
    }

    /// `items` merged by their keys in calls of `per_call` items (f16 scales).
    fn merged<const H: usize>(
        by_scale: &mut ByScale<H>,
        items: &[(u16, [[u16; 16]; H])],
        tables: &'static [[f32; 16]; H],
        per_call: usize,
    ) {
        for part in items.chunks(per_call) {
            let kind = by_scale.begin(tables, f16_to_f32);
            for &(bits, counts) in part {
                by_scale.merge(usize::from(bits), counts, kind);
            }
        }
    }

    /// Each value's total count.
    fn by_value(groups: &[Group]) -> BTreeMap<u32, u64> {
        let mut out = BTreeMap::new();
        for g in groups {
            for i in 0..16 {
                let v = g.value(i);
                let bits = if v.is_nan() { f32::NAN.to_bits() } else { v.to_bits() };
                *out.entry(bits).or_default() += u64::from(g.counts[i]);
            }
        }
        out.retain(|_, &mut n| n > 0);
        out
    }

    /// Items of `H` groups merged by their scales' bits hold the items' values: one key (its
    /// slot emptied every 255 items), a few, many (both signs, zero, subnormal, infinite and NaN
    /// scales among them); a key's items, fewer than a slot holds, merge into one group a half.
    fn merged_by_scale_bits_hold_the_items_values<const H: usize>(tables: &'static [[f32; 16]; H]) {
        let mut seed = 0x6a09_e667_f3bc_c908u64;
        for (n, keys) in [(40_000, 1), (5000, 7), (60_000, 9000)] {
            let items = items::<H>(n, keys, &mut seed);
            let mut by_scale = ByScale::<H>::default();
            merged(&mut by_scale, &items, tables, 999);
            by_scale.empty();
            assert_eq!(by_value(&by_scale.out), by_value(&as_groups(&items, tables)), "{n} items over {keys} keys");
            if n / keys as usize <= 200 {
                assert!(by_scale.out.len() <= keys as usize * H, "{} groups of {keys} keys", by_scale.out.len());
            }
            by_scale.release();
        }
    }

    #[test]
    fn merged_pairs_by_scale_bits_hold_the_pairs_values() {
        merged_by_scale_bits_hold_the_items_values::<2>(&TABLES);
    }

    #[test]
    fn merged_singles_by_scale_bits_hold_the_singles_values() {
        merged_by_scale_bits_hold_the_items_values::<1>(&FIRST);
    }

    /// A key stands for the scale its kind makes of it (an `E8M0` byte's power of two).
    #[test]
    fn a_key_stands_for_its_kind_s_scale() {
        fn power_of_two(k: u16) -> f32 {
            2f32.powi(i32::from(k) - 127)
        }
        let counts = [std::array::from_fn(|i| i as u16)];
        let mut by_scale = ByScale::<1>::default();
        let kind = by_scale.begin(&FIRST, power_of_two);
        for k in [127, 130, 127] {
            by_scale.merge(k, counts, kind);
        }
        let mut got = Vec::new();
        by_scale.count_with(|g| got.extend_from_slice(g));
        let group = |a: f32, n: u16| Group::new(a, NO_OFFSET, &TABLES[0], counts[0].map(|c| n * c));
        assert_eq!(by_value(&got), by_value(&[group(1.0, 2), group(8.0, 1)]));
    }

    /// Items of another kind than those merged so far are merged apart: the earlier ones are
    /// moved to the merged groups, of their own tables and scales, first.
    #[test]
    fn items_of_another_kind_are_merged_apart() {
        let counts = [std::array::from_fn(|i| i as u16)];
        let mut by_scale = ByScale::<1>::default();
        let half = |k: u16| f16_to_f32(k) / 2.0;
        for (tables, scale_of) in
            [(&FIRST, f16_to_f32 as ScaleOf), (&SECOND, f16_to_f32), (&SECOND, f16_to_f32), (&SECOND, half)]
        {
            let kind = by_scale.begin(tables, scale_of);
            by_scale.merge(0x3c00, counts, kind);
        }
        by_scale.empty();
        let group = |t: &'static [f32; 16], a: f32, n: u16| Group::new(a, NO_OFFSET, t, counts[0].map(|c| n * c));
        let want = [group(&TABLES[0], 1.0, 1), group(&TABLES[1], 1.0, 2), group(&TABLES[1], 0.5, 1)];
        assert_eq!(by_value(&by_scale.out), by_value(&want));
        assert_eq!(by_scale.out.len(), 3, "one group for each kind's slot");
    }

    #[test]
    fn counted_groups_are_the_merged_ones_once() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let items = items::<2>(30_000, 500, &mut seed);
        let mut by_scale = ByScale::<2>::default();
        merged(&mut by_scale, &items, &TABLES, 30_000);
        let mut counted = Vec::new();
        by_scale.count_with(|g| counted.extend_from_slice(g));
        assert_eq!(by_value(&counted), by_value(&as_groups(&items, &TABLES)));
        assert!(counted.len() < items.len() / 10, "{} groups of {} items", counted.len(), items.len());
        assert!(by_scale.taken.is_empty() && by_scale.out.is_empty());
        by_scale.count_with(|g| assert!(g.is_empty(), "nothing is counted twice"));
    }

    #[test]
    fn a_released_table_serves_the_thread_s_next_merger_clean() {
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        let mut first = ByScale::<1>::default();
        // Merged and released before being counted: the table is full of counts.
        merged(&mut first, &items::<1>(20_000, 3000, &mut seed), &FIRST, 20_000);
        let table = first.table.0.as_ptr();
        first.release();
        assert!(first.table.0.is_empty() && first.taken.is_empty());
        let second_items = items::<1>(5000, 50, &mut seed);
        let mut second = ByScale::<1>::default();
        merged(&mut second, &second_items, &FIRST, 5000);
        assert_eq!(second.table.0.as_ptr(), table, "the released table is taken again");
        second.empty();
        assert_eq!(by_value(&second.out), by_value(&as_groups(&second_items, &FIRST)));
        // A merger of another `H` takes no spare of this one's; a released merger takes a table
        // again if more items come.
        second.release();
        let mut pairs = ByScale::<2>::default();
        merged(&mut pairs, &items::<2>(10, 5, &mut seed), &TABLES, 10);
        assert_eq!(pairs.table.0.len(), SLOTS);
        merged(&mut first, &second_items, &FIRST, 5000);
        first.empty();
        assert_eq!(by_value(&first.out), by_value(&as_groups(&second_items, &FIRST)));
    }
}
