//! Stable sorting through one compiled sort. The standard library's sort is instantiated once per
//! element type and comparison, one to three kilobytes of wasm each; here every sort orders
//! positions with a comparison called through a reference, so the bundle carries one instance,
//! and moves the elements into that order in place.

use std::cmp::Ordering;

/// The positions `0..n` in the stable order `cmp` gives them (equal positions keep their order).
pub fn order_by(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Sorts `v` stably by `cmp`, as `slice::sort_by` does.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.windows(2).all(|w| cmp(&w[0], &w[1]) != Ordering::Greater) {
        return;
    }
    let order = order_by(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    permute(v, order);
}

/// Sorts `v` stably by `key`, as `slice::sort_by_key` does.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `v` stably by `key`, computed once per element, as `slice::sort_by_cached_key` does.
pub fn sort_by_cached_key<T, K: Ord>(v: &mut [T], key: impl FnMut(&T) -> K) {
    let keys: Vec<K> = v.iter().map(key).collect();
    permute(v, order_by(keys.len(), &mut |a, b| keys[a].cmp(&keys[b])));
}

/// Sorts `v` in increasing order, as `slice::sort` does.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// Moves `v[order[k]]` to position `k` for every `k`, cycle by cycle (`order` is a permutation).
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for start in 0..v.len() {
        let mut k = start;
        while order[k] != start {
            let from = std::mem::replace(&mut order[k], k);
            v.swap(k, from);
            k = from;
        }
        order[k] = k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random numbers below `m`.
    fn numbers(n: usize, m: u64, mut seed: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % m
            })
            .collect()
    }

    #[test]
    fn sorts_equal_the_standard_librarys_stable_sort() {
        for (n, m) in [(0, 1), (1, 5), (2, 2), (7, 3), (100, 10), (1000, 1000), (5000, 7), (3000, u64::MAX)] {
            let keys = numbers(n, m, 0x9e37_79b9_7f4a_7c15 ^ n as u64);
            // (key, original position): equal keys must keep their order.
            let mut ours: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
            let mut reference = ours.clone();
            sort_by_key(&mut ours, |x| x.0);
            reference.sort_by_key(|x| x.0);
            assert_eq!(ours, reference, "n {n} m {m}");
            let mut desc = ours.clone();
            sort_by(&mut desc, |a, b| b.0.cmp(&a.0));
            reference.sort_by_key(|x| std::cmp::Reverse(x.0));
            assert_eq!(desc, reference, "descending, n {n} m {m}");
            let mut cached = desc.clone();
            sort_by_cached_key(&mut cached, |x| x.0 % 5);
            reference.sort_by_cached_key(|x| x.0 % 5);
            assert_eq!(cached, reference, "cached, n {n} m {m}");
        }
    }

    #[test]
    fn sorted_and_reversed_inputs_and_owned_elements() {
        let mut v: Vec<String> = (0..50).rev().map(|i| format!("{i:03}")).collect();
        sort(&mut v);
        assert_eq!(v, (0..50).map(|i| format!("{i:03}")).collect::<Vec<_>>());
        sort(&mut v);
        assert_eq!(v[0], "000");
        assert_eq!(order_by(4, &mut |a, b| b.cmp(&a)), [3, 2, 1, 0]);
    }
}
