//! Finding repeated keys without hashing: a sort of indices, so keys a hostile file chose cannot
//! make it slow, and no key is copied.

/// Which of several items with the same key is the one kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    First,
    Last,
}

/// The indices `0..n` whose key repeats another's and are not the one kept, in increasing order.
pub fn repeated<'a, K: Ord + ?Sized + 'a>(n: usize, keep: Keep, key: impl Fn(usize) -> &'a K) -> Vec<usize> {
    let order = crate::sort::order_by(n, &mut |a, b| key(a).cmp(key(b)));
    let mut out = Vec::new();
    let mut run = 0;
    while run < order.len() {
        let mut end = run + 1;
        while end < order.len() && key(order[end]) == key(order[run]) {
            end += 1;
        }
        let kept = if keep == Keep::First { run } else { end - 1 };
        out.extend((run..end).filter(|&i| i != kept).map(|i| order[i]));
        run = end;
    }
    crate::sort::sort(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_found_and_the_chosen_one_kept() {
        let keys = ["a", "b", "a", "c", "b", "a"];
        assert_eq!(repeated(keys.len(), Keep::First, |i| keys[i]), vec![2, 4, 5]);
        assert_eq!(repeated(keys.len(), Keep::Last, |i| keys[i]), vec![0, 1, 2]);
        assert!(repeated(0, Keep::First, |i| keys[i]).is_empty());
    }
}
