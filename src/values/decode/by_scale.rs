//! Groups merged by scale before they are counted: groups with the same scale, offset and table
//! have the same sixteen values, so their counts can be added and the values binned once for all
//! of them ([`ByScale`]).
//!
//! A block's scale is one `f16` (or an `E8M0`) taken from the data: a 1 MiB piece of a real
//! tensor's 30,000-60,000 blocks holds a few hundred to a few thousand distinct scales, so most
//! groups cost an add of sixteen counts instead of sixteen bucket updates and their statistics.
//!
//! A block of 32 codes under one scale (Q5_0) comes as two groups, its codes `0..16` and
//! `16..32`, merged as one item of two halves (`ByScale<2>`): one key a block, not two.
//!
//! Blocks of an `f16` scale and no offset (Q4_0, IQ4_NL, Q5_0) are merged by their decoders as
//! they are counted ([`super::groups::MergedFn`]): each block's counts go from the vector
//! registers they were counted in straight to its scale's slot, by the scale's bits.

use super::f16_to_f32;
use super::groups::Group;

/// Items ahead of the one being merged whose slot is fetched into the cache.
pub(super) const AHEAD: usize = 8;

/// Slots of the table: one for every `f16` bit pattern.
const SLOTS: usize = 1 << 16;

/// Items a slot merges before it is emptied: an item holds at most 256 elements, so no count
/// passes `u16::MAX`.
const SLOT_ITEMS: u16 = 255;

/// The `f16` bits of `a` where it is a normal `f16` value (a block's scale, converted), a zero
/// (blocks of pruned or padded rows) or an infinity; `None` for subnormals and NaN (rare, and
/// counted unmerged), and for any value no `f16` holds.
#[inline(always)]
fn f16_bits(a: f32) -> Option<u16> {
    let bits = a.to_bits();
    let (sign, exp) = ((bits >> 16) & 0x8000, (bits >> 23) & 0xff);
    match (exp, bits & 0x7f_ffff) {
        (0, 0) => Some(sign as u16),
        (255, 0) => Some((sign | 0x7c00) as u16),
        // f16's normal exponents are f32's 113..=142 (biases 15 and 127); 13 mantissa bits drop.
        (113..=142, m) if m & 0x1fff == 0 => Some((sign | (((bits >> 13) - (112 << 10)) & 0x7fff)) as u16),
        _ => None,
    }
}

/// Slots by scale, a slot per `f16` bit pattern: each scale's merged counts, per half, and the
/// items merged into it since it was emptied. Allocated zeroed: a page is touched only where
/// scales fall. (Slots are not aligned to cache lines: a two-half slot on a line of its own
/// measured alike.)
type Table<const H: usize> = (Vec<[[u16; 16]; H]>, Vec<u16>);

/// What a merger keeps between pieces, empty: its table, its list of taken slots and its
/// merged groups (a piece's groups: a megabyte of them on Q5_0, grown anew by each merger took
/// 800 page faults a thread).
type Spared<const H: usize> = (Table<H>, Vec<u16>, Vec<Group>);

/// Counts merged by scale, for items of `H` groups in a row (one block's, of one scale and no
/// offset: `H` halves of its codes). The table has a slot per `f16` scale, indexed by its bits:
/// no hashing, no probing, and a tensor's scales, which lie close together, fall in a few
/// chunks of it (a hashed table of keys measured 0.8x on Q5_0, its slots missing the cache).
pub struct ByScale<const H: usize = 1> {
    table: Table<H>,
    /// The slots taken, in the order they were taken.
    taken: Vec<u16>,
    /// The halves' tables, the first item's: a codec's items all have the same.
    tables: Option<[&'static [f32; 16]; H]>,
    /// Merged groups to count, and groups that could not be merged.
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
    /// A merger with no table yet (it takes one with its first groups).
    fn default() -> Self {
        ByScale { table: (Vec::new(), Vec::new()), taken: Vec::new(), tables: None, out: Vec::new() }
    }
}

impl<const H: usize> ByScale<H> {
    /// Add `groups`' counts to their scales': an item is `H` groups in a row, one block's
    /// halves (any groups past the last whole item are ignored). Items of a scale no `f16`
    /// normal holds, with an offset, or of other tables are kept as they are.
    pub fn add(&mut self, groups: &[Group]) {
        self.take_table();
        let items = groups.as_chunks::<H>().0;
        for (n, item) in items.iter().enumerate() {
            if let Some(i) = items.get(n + AHEAD).and_then(|ahead| f16_bits(ahead[0].a)) {
                self.prefetch(usize::from(i));
            }
            debug_assert!(item.iter().flat_map(|g| g.counts).map(u32::from).sum::<u32>() <= 256, "a block");
            let g = &item[0];
            let tables = item.each_ref().map(|g| g.table);
            let ours = *self.tables.get_or_insert(tables);
            let merged = f16_bits(g.a).filter(|_| {
                g.b.to_bits() == (-0f32).to_bits()
                    && item.iter().all(|h| h.a.to_bits() == g.a.to_bits() && h.b.to_bits() == g.b.to_bits())
                    && tables.iter().zip(ours).all(|(t, o)| std::ptr::eq(*t, o))
            });
            match merged {
                Some(i) => self.merge(usize::from(i), item.each_ref().map(|g| g.counts), ours),
                None => self.out.extend_from_slice(item),
            }
        }
    }

    /// Ready to merge items of `tables` by their scale's bits ([`ByScale::merge`]): the tables
    /// to pass there. Items merged before, of other tables, are moved to the merged groups.
    #[inline(always)]
    pub(super) fn begin(&mut self, tables: &'static [[f32; 16]; H]) -> [&'static [f32; 16]; H] {
        self.take_table();
        let theirs: [&'static [f32; 16]; H] = std::array::from_fn(|i| &tables[i]);
        let ours = *self.tables.get_or_insert(theirs);
        if !ours.iter().zip(theirs).all(|(o, t)| std::ptr::eq(*o, t)) {
            self.empty();
            self.tables = Some(theirs);
        }
        theirs
    }

    /// The thread's spare table, or a new one, unless this merger has one.
    #[inline(always)]
    fn take_table(&mut self) {
        if self.table.0.is_empty() {
            let spare = SPARE.take().and_then(|s| s.downcast::<Spared<H>>().ok());
            (self.table, self.taken, self.out) = spare.map(|s| *s).unwrap_or_default();
            if self.table.0.is_empty() {
                self.table = (vec![[[0; 16]; H]; SLOTS], vec![0; SLOTS]);
            }
        }
    }

    /// Add an item's `counts` to slot `i`, the slot of the `f16` scale whose bits are `i`
    /// (`tables` as [`ByScale::begin`] gave them; the slot's scale is the same conversion of its
    /// bits as any other `f16`'s, whatever they hold).
    #[inline(always)]
    pub(super) fn merge(&mut self, i: usize, counts: [[u16; 16]; H], tables: [&'static [f32; 16]; H]) {
        for (slot, counts) in self.table.0[i].iter_mut().zip(&counts) {
            for (c, &n) in slot.iter_mut().zip(counts) {
                *c += n;
            }
        }
        let items = &mut self.table.1[i];
        if *items == 0 {
            self.taken.push(i as u16);
        }
        *items += 1;
        if *items == SLOT_ITEMS {
            // Emptied now; still listed as taken, it is passed over there unless taken again.
            *items = 0;
            let counts = std::mem::replace(&mut self.table.0[i], [[0; 16]; H]);
            push_groups(&mut self.out, i, counts, tables);
        }
    }

    /// Start fetching slot `i`'s counts into the cache (on x86-64: they miss it, a 64 MiB
    /// tensor's bytes passing through between a scale's blocks).
    #[inline(always)]
    pub(super) fn prefetch(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot: *const [[u16; 16]; H] = &self.table.0[i];
            // SAFETY: a prefetch of a slot of the table (it reads nothing).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Hand every merged group to `count`, and empty the table.
    pub fn count_with(&mut self, count: impl FnOnce(&[Group])) {
        self.empty();
        count(&self.out);
        self.out.clear();
    }

    /// Give the table back to the thread, for its next merger, once no more groups will come
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
        let Some(tables) = self.tables else { return };
        for &i in &self.taken {
            let i = usize::from(i);
            if std::mem::take(&mut self.table.1[i]) == 0 {
                continue;
            }
            let counts = std::mem::replace(&mut self.table.0[i], [[0; 16]; H]);
            push_groups(&mut self.out, i, counts, tables);
        }
        self.taken.clear();
    }
}

/// Append slot `i`'s merged `counts` to `out` as groups of `tables`: the scale is the `f16`
/// whose bits are `i`, and no offset.
fn push_groups<const H: usize>(
    out: &mut Vec<Group>,
    i: usize,
    counts: [[u16; 16]; H],
    tables: [&'static [f32; 16]; H],
) {
    let a = f16_to_f32(i as u16);
    for (table, counts) in tables.into_iter().zip(counts) {
        out.push(Group::new(a, -0.0, table, counts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    static TABLES: [[f32; 16]; 2] = [
        [-8., -7., -6., -5., -4., -3., -2., -1., 0., 1., 2., 3., 4., 5., 6., 7.],
        [-1., 0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14.],
    ];

    const NO_OFFSET: f32 = -0.0;

    /// `n` items of `H` groups, 32 elements an item, over `keys` distinct `f16` scales (of both
    /// signs, some not normal: zero, subnormal, infinite, NaN), every `odd`th with an offset
    /// or the other table.
    fn items<const H: usize>(n: usize, keys: u32, odd: usize, seed: &mut u64) -> Vec<Group> {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let unusual = [0x0000, 0x8000, 0x0001, 0x83ff, 0x7c00, 0xfc00, 0x7e00, 0x0400, 0x7bff];
        let mut out = Vec::new();
        for i in 0..n {
            let k = (next() % u64::from(keys)) as u16;
            // Distinct keys, normal values of both signs (`keys` below 14,000), a few unusual.
            let bits =
                if k % 97 == 5 { unusual[usize::from(k) % unusual.len()] } else { (0x1000 + 2 * k) | (k & 1) << 15 };
            let a = f32::from(half::f16::from_bits(bits));
            let mut counts = [[0u16; 16]; H];
            for _ in 0..32 {
                counts[(next() % H as u64) as usize][(next() % 16) as usize] += 1;
            }
            let (b, table) = match i % odd {
                1 => (0.5, 0),
                2 => (NO_OFFSET, 1),
                _ => (NO_OFFSET, 0),
            };
            out.extend(counts.map(|c| Group::new(a, b, &TABLES[table], c)));
        }
        out
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

    #[test]
    fn f16_bits_are_those_of_normal_zero_and_infinite_f16_values_only() {
        for bits in 0..=u16::MAX {
            let h = half::f16::from_bits(bits);
            let want = (h.is_normal() || h == half::f16::ZERO || h.is_infinite()).then_some(bits);
            assert_eq!(f16_bits(f32::from(h)), want, "{bits:#06x}");
        }
        for a in [1e-8f32, 1e6, 0.1, -3.0e-5, f32::MIN_POSITIVE] {
            assert_eq!(f16_bits(a), None, "{a} is no f16");
        }
    }

    /// Every item merged (or kept) gives the same values, for one group an item and for two.
    fn merged_items_hold_the_items_values<const H: usize>() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        // One key (its slot emptied every 255 items), a few, many; then items with offsets,
        // other tables and unusual scales among them, which are kept as they are.
        for (n, keys, odd) in
            [(40_000, 1, usize::MAX), (5000, 7, usize::MAX), (60_000, 9000, usize::MAX), (20_000, 300, 7)]
        {
            let groups = items::<H>(n, keys, odd, &mut seed);
            let mut merged = ByScale::<H>::default();
            for part in groups.chunks(999 * H) {
                merged.add(part);
            }
            merged.empty();
            assert_eq!(by_value(&merged.out), by_value(&groups), "{n} items over {keys} keys");
            // A key's items (fewer than a slot holds) merge into one group a half, unusual
            // scales apart.
            if odd == usize::MAX && n / keys as usize <= 200 {
                let unusual = n * H / keys as usize * (keys as usize / 97 + 1) * 2;
                assert!(merged.out.len() <= keys as usize * H + unusual, "{} groups of {keys} keys", merged.out.len());
            }
        }
    }

    #[test]
    fn merged_groups_hold_the_groups_values() {
        merged_items_hold_the_items_values::<1>();
    }

    #[test]
    fn merged_pairs_hold_the_pairs_values() {
        merged_items_hold_the_items_values::<2>();
    }

    /// Items of `H` groups merged by their scales' bits hold the items' values: one key (its
    /// slot emptied every 255 items), a few, many (both signs, zero, subnormal, infinite and NaN
    /// scales among them).
    fn merged_by_scale_bits_hold_the_items_values<const H: usize>(tables: &'static [[f32; 16]; H]) {
        let mut seed = 0x6a09_e667_f3bc_c908u64;
        for (n, keys) in [(40_000, 1), (5000, 7), (60_000, 9000)] {
            let groups = items::<H>(n, keys, usize::MAX, &mut seed);
            let items = groups.as_chunks::<H>().0;
            let scale_bits = |item: &[Group; H]| half::f16::from_f32(item[0].a).to_bits();
            let as_groups: Vec<Group> = items
                .iter()
                .flat_map(|item| {
                    let a = f16_to_f32(scale_bits(item));
                    std::array::from_fn::<_, H, _>(|i| Group::new(a, NO_OFFSET, &tables[i], item[i].counts))
                })
                .collect();
            let mut merged = ByScale::<H>::default();
            for part in items.chunks(999) {
                let ours = merged.begin(tables);
                for item in part {
                    merged.merge(usize::from(scale_bits(item)), item.each_ref().map(|g| g.counts), ours);
                }
            }
            merged.empty();
            assert_eq!(by_value(&merged.out), by_value(&as_groups), "{n} items over {keys} keys");
            merged.release();
        }
    }

    #[test]
    fn merged_pairs_by_scale_bits_hold_the_pairs_values() {
        merged_by_scale_bits_hold_the_items_values::<2>(&TABLES);
    }

    #[test]
    fn merged_singles_by_scale_bits_hold_the_singles_values() {
        static ONE: [[f32; 16]; 1] = [TABLES[0]];
        merged_by_scale_bits_hold_the_items_values::<1>(&ONE);
    }

    /// Items of other tables than those merged so far are merged apart: the earlier ones are
    /// moved to the merged groups, of their own tables, first.
    #[test]
    fn items_of_other_tables_are_merged_apart() {
        static FIRST: [[f32; 16]; 1] = [TABLES[0]];
        static SECOND: [[f32; 16]; 1] = [TABLES[1]];
        let counts = [std::array::from_fn(|i| i as u16)];
        let mut merged = ByScale::<1>::default();
        for tables in [&FIRST, &SECOND, &SECOND] {
            let ours = merged.begin(tables);
            merged.merge(0x3c00, counts, ours);
        }
        merged.empty();
        let one = |t: &'static [f32; 16], n: u16| Group::new(1.0, NO_OFFSET, t, counts[0].map(|c| n * c));
        assert_eq!(by_value(&merged.out), by_value(&[one(&TABLES[0], 1), one(&TABLES[1], 2)]));
        assert_eq!(merged.out.len(), 2, "one group for each table's slot");
    }

    #[test]
    fn counted_groups_are_the_merged_ones_once() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let groups = items::<2>(30_000, 500, 11, &mut seed);
        let mut merged = ByScale::<2>::default();
        merged.add(&groups);
        let mut counted = Vec::new();
        merged.count_with(|g| counted.extend_from_slice(g));
        assert_eq!(by_value(&counted), by_value(&groups));
        assert!(counted.len() < groups.len() / 4, "{} groups of {}", counted.len(), groups.len());
        assert!(merged.taken.is_empty() && merged.out.is_empty());
        merged.count_with(|g| assert!(g.is_empty(), "nothing is counted twice"));
    }

    #[test]
    fn a_released_table_serves_the_thread_s_next_merger_clean() {
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        let mut first = ByScale::<1>::default();
        // Merged and released before being counted: the table is full of counts.
        first.add(&items::<1>(20_000, 3000, usize::MAX, &mut seed));
        let table = first.table.0.as_ptr();
        first.release();
        assert!(first.table.0.is_empty() && first.taken.is_empty());
        let second_items = items::<1>(5000, 50, usize::MAX, &mut seed);
        let mut second = ByScale::<1>::default();
        second.add(&second_items);
        assert_eq!(second.table.0.as_ptr(), table, "the released table is taken again");
        second.empty();
        assert_eq!(by_value(&second.out), by_value(&second_items));
        // A released merger takes a table again if more groups come.
        first.add(&second_items);
        first.empty();
        assert_eq!(by_value(&first.out), by_value(&second_items));
    }
}
