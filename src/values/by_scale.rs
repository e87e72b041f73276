//! Groups merged by scale before they are counted: groups with the same scale, offset and table
//! have the same sixteen values, so their counts can be added and the values binned once for all
//! of them ([`ByScale`]).
//!
//! A block's scale is one `f16` (or an `E8M0`) taken from the data: a 1 MiB piece of a real
//! tensor's 30,000-60,000 blocks holds a few hundred to a few thousand distinct scales, so most
//! groups cost an add of sixteen counts instead of sixteen bucket updates and their statistics.

use super::codes::add_groups;
use super::decode::groups::Group;
use super::histogram::Histogram;

/// Slots of the table at most (a power of two): it grows from [`FIRST_SLOTS`] while half of its
/// slots would be taken, and is emptied when half of these are (a fresh slot costs a page fault
/// a 64, so a small tensor's table stays small).
const MAX_SLOTS: usize = 1 << 14;
/// Slots of a new table.
const FIRST_SLOTS: usize = 1 << 8;

/// Groups a slot merges before it is emptied: a group holds at most 256 elements, so no count
/// passes `u16::MAX`.
const SLOT_GROUPS: u16 = 255;

/// What identifies a group's values: its scale's and offset's bits, and its table.
#[derive(Clone, Copy)]
struct Key {
    bits: u64,
    table: &'static [f32; 16],
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.bits == other.bits && std::ptr::eq(self.table, other.table)
    }
}

/// A key and its merged counts, one cache line.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Slot {
    key: Option<Key>,
    counts: [u16; 16],
    groups: u16,
}

/// Groups ahead of the one being merged whose slot is fetched into the cache.
const AHEAD: usize = 8;

/// A group's scale's and offset's bits.
#[inline(always)]
fn key_bits(g: &Group) -> u64 {
    u64::from(g.a.to_bits()) | u64::from(g.b.to_bits()) << 32
}

/// Groups merged by key in an open-addressed table, emptied in the order each key came.
pub struct ByScale {
    slots: Vec<Slot>,
    /// The slots taken, in the order they were taken.
    taken: Vec<u32>,
    /// Merged groups to count.
    out: Vec<Group>,
}

impl std::fmt::Debug for ByScale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByScale").field("taken", &self.taken.len()).finish_non_exhaustive()
    }
}

thread_local! {
    /// The largest table a merger of this thread released, empty, for the thread's next: a
    /// grown table's fresh pages cost a fault each, and a whole tensor's parts each make a
    /// merger (the faults were 4% of a 2-thread TQ2_0 histogram).
    static SPARE: std::cell::RefCell<Vec<Slot>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Default for ByScale {
    /// A merger with no table yet (it takes one with its first groups).
    fn default() -> Self {
        ByScale { slots: Vec::new(), taken: Vec::new(), out: Vec::new() }
    }
}

impl ByScale {
    /// Add `groups`' counts to their keys'.
    pub fn add(&mut self, groups: &[Group]) {
        if self.slots.is_empty() {
            self.slots = SPARE.take();
            if self.slots.is_empty() {
                self.slots = vec![Slot::default(); FIRST_SLOTS];
            }
        }
        for (n, g) in groups.iter().enumerate() {
            if let Some(ahead) = groups.get(n + AHEAD) {
                self.prefetch(key_bits(ahead));
            }
            debug_assert!(g.counts.iter().map(|&c| u32::from(c)).sum::<u32>() <= 256, "a group of a block");
            let i = self.slot(Key { bits: key_bits(g), table: g.table });
            let slot = &mut self.slots[i];
            for (c, &n) in slot.counts.iter_mut().zip(&g.counts) {
                *c += n;
            }
            slot.groups += 1;
            if slot.groups == SLOT_GROUPS {
                self.out.push(Group::new(g.a, g.b, g.table, std::mem::take(&mut slot.counts)));
                slot.groups = 0;
            }
        }
    }

    /// The slot of `key`, taken if it was not (the table is emptied first if half of it is).
    #[inline(always)]
    fn slot(&mut self, key: Key) -> usize {
        let mut i = self.first_slot(key.bits);
        loop {
            match self.slots[i].key {
                Some(k) if k == key => return i,
                Some(_) => i = (i + 1) % self.slots.len(),
                None if self.taken.len() == self.slots.len() / 2 => {
                    if self.slots.len() < MAX_SLOTS {
                        self.grow();
                    } else {
                        self.empty();
                    }
                    i = self.first_slot(key.bits);
                }
                None => {
                    self.slots[i].key = Some(key);
                    self.taken.push(i as u32);
                    return i;
                }
            }
        }
    }

    /// Start fetching the slot where the search for `bits` starts into the cache (on x86-64;
    /// 1.06x on Q4_0, whose slots outgrow the core's cache).
    #[inline(always)]
    fn prefetch(&self, bits: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot: *const Slot = &self.slots[self.first_slot(bits)];
            // SAFETY: a prefetch of a slot of the table (it reads nothing).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = bits;
    }

    /// The slot a key's search starts at.
    #[inline(always)]
    fn first_slot(&self, bits: u64) -> usize {
        (bits.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// Twice the slots, each taken one moved to its place in them (the order taken kept).
    #[cold]
    fn grow(&mut self) {
        let grown = vec![Slot::default(); 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, grown);
        let mut taken = std::mem::take(&mut self.taken);
        for t in &mut taken {
            let slot = old[*t as usize];
            let key = slot.key.expect("a taken slot has a key");
            let mut i = self.first_slot(key.bits);
            while self.slots[i].key.is_some() {
                i = (i + 1) % self.slots.len();
            }
            self.slots[i] = slot;
            *t = i as u32;
        }
        self.taken = taken;
    }

    /// Count every merged group into `h`, and empty the table.
    pub fn count_into(&mut self, h: &mut Histogram) {
        self.empty();
        add_groups(h, &self.out);
        self.out.clear();
    }

    /// Give the table back to the thread, for its next merger, once no more groups will come
    /// (what was merged and not counted is dropped).
    pub fn release(&mut self) {
        self.empty();
        self.out.clear();
        let slots = std::mem::take(&mut self.slots);
        SPARE.with_borrow_mut(|spare| {
            if slots.len() > spare.len() {
                *spare = slots;
            }
        });
    }

    /// Move every taken slot into the merged groups.
    fn empty(&mut self) {
        for &i in &self.taken {
            let slot = std::mem::take(&mut self.slots[i as usize]);
            let key = slot.key.expect("a taken slot has a key");
            if slot.groups > 0 {
                let (a, b) = (f32::from_bits(key.bits as u32), f32::from_bits((key.bits >> 32) as u32));
                self.out.push(Group::new(a, b, key.table, slot.counts));
            }
        }
        self.taken.clear();
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

    /// `n` groups of 32 elements over `keys` distinct scales and both tables.
    fn groups(n: usize, keys: u32, seed: &mut u64) -> Vec<Group> {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        (0..n)
            .map(|_| {
                let k = (next() % u64::from(keys)) as u32;
                let mut counts = [0u16; 16];
                for _ in 0..32 {
                    counts[(next() % 16) as usize] += 1;
                }
                let a = f32::from_bits(0x3c00_0000 + (k >> 1) * 8192);
                Group::new(a, NO_OFFSET, &TABLES[(k & 1) as usize], counts)
            })
            .collect()
    }

    const NO_OFFSET: f32 = -0.0;

    /// Each value's total count.
    fn by_value(groups: &[Group]) -> BTreeMap<u32, u64> {
        let mut out = BTreeMap::new();
        for g in groups {
            for i in 0..16 {
                *out.entry(g.value(i).to_bits()).or_default() += u64::from(g.counts[i]);
            }
        }
        out.retain(|_, &mut n| n > 0);
        out
    }

    #[test]
    fn merged_groups_hold_the_groups_values() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        // One key (slots emptied every 255 groups), a few, more than a first table holds (it
        // grows), and more than the largest holds (it is emptied when half full).
        for (n, keys) in [(40_000, 1), (5000, 7), (20_000, 3000), (60_000, 40_000)] {
            let groups = groups(n, keys, &mut seed);
            let mut merged = ByScale::default();
            for part in groups.chunks(999) {
                merged.add(part);
            }
            merged.empty();
            assert_eq!(by_value(&merged.out), by_value(&groups), "{n} groups over {keys} keys");
            // Within the largest table, a key's groups (fewer than a slot holds) merge into one.
            if keys as usize <= MAX_SLOTS / 2 && n / keys as usize <= 200 {
                assert!(merged.out.len() <= keys as usize, "{} merged groups of {keys} keys", merged.out.len());
            }
            assert!(merged.slots.len() <= MAX_SLOTS);
        }
    }

    #[test]
    fn merged_groups_give_the_groups_histogram() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let groups = groups(30_000, 500, &mut seed);
        let mut merged = ByScale::default();
        merged.add(&groups);
        let mut by_scale = Histogram::default();
        merged.count_into(&mut by_scale);
        by_scale.end_piece();
        let mut one_by_one = Histogram::default();
        add_groups(&mut one_by_one, &groups);
        one_by_one.end_piece();
        let (a, b) = (&by_scale.stats, &one_by_one.stats);
        assert_eq!((a.count, a.zero, a.min, a.max), (b.count, b.zero, b.min, b.max));
        assert!((a.mean - b.mean).abs() <= 1e-12 * a.std() && (a.std() - b.std()).abs() <= 1e-12 * a.std());
        assert_eq!(by_scale.bins(61), one_by_one.bins(61));
        assert!(merged.taken.is_empty() && merged.out.is_empty());
    }

    #[test]
    fn a_released_table_serves_the_thread_s_next_merger_clean() {
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        let mut first = ByScale::default();
        // Merged and released before being counted: the table is grown and full of keys.
        first.add(&groups(20_000, 3000, &mut seed));
        let grown = first.slots.len();
        assert!(grown > FIRST_SLOTS);
        first.release();
        assert!(first.slots.is_empty() && first.taken.is_empty());
        let second_groups = groups(5000, 50, &mut seed);
        let mut second = ByScale::default();
        second.add(&second_groups);
        assert_eq!(second.slots.len(), grown, "the released table is taken again");
        second.empty();
        assert_eq!(by_value(&second.out), by_value(&second_groups));
        // A released merger takes a table again if more groups come.
        first.add(&second_groups);
        first.empty();
        assert_eq!(by_value(&first.out), by_value(&second_groups));
    }
}
