//! Hash maps a file cannot flood. Their keys (tensor names, storage keys, memo indices) come
//! from files, so a map's hasher must be keyed by a secret: std's `RandomState` is natively,
//! but on wasm32-unknown-unknown its keys are the same in every page (there is no randomness
//! source), and names chosen to collide under them would make a map quadratic. These maps are
//! keyed from [`seed`], which the browser calls at start with its own randomness; natively the
//! keys come from `RandomState`.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

static SEEDED: AtomicBool = AtomicBool::new(false);
static K0: AtomicU64 = AtomicU64::new(0);
static K1: AtomicU64 = AtomicU64::new(0);

/// Key every map made from now on with `k0`, `k1` (secret, random).
pub fn seed(k0: u64, k1: u64) {
    K0.store(k0, Relaxed);
    K1.store(k1, Relaxed);
    SEEDED.store(true, Relaxed);
}

/// The keys: [`seed`]'s, else the platform's own.
fn keys() -> (u64, u64) {
    if SEEDED.load(Relaxed) {
        return (K0.load(Relaxed), K1.load(Relaxed));
    }
    static PLATFORM: OnceLock<(u64, u64)> = OnceLock::new();
    *PLATFORM.get_or_init(|| {
        let s = std::collections::hash_map::RandomState::new();
        (s.hash_one(0x5eed_u64), s.hash_one(0x5eed_u64 ^ u64::MAX))
    })
}

/// A hasher keyed by [`seed`].
#[derive(Clone, Copy, Debug)]
pub struct Seeded(u64, u64);

impl Default for Seeded {
    fn default() -> Self {
        let (k0, k1) = keys();
        Seeded(k0, k1)
    }
}

impl BuildHasher for Seeded {
    #[allow(deprecated)] // SipHash-2-4 is the one keyed SipHash std offers.
    type Hasher = std::hash::SipHasher;
    #[allow(deprecated)]
    fn build_hasher(&self) -> Self::Hasher {
        std::hash::SipHasher::new_with_keys(self.0, self.1)
    }
}

/// A `HashMap` keyed by [`seed`].
pub type HashMap<K, V> = std::collections::HashMap<K, V, Seeded>;
/// A `HashSet` keyed by [`seed`].
pub type HashSet<K> = std::collections::HashSet<K, Seeded>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_are_keyed_by_the_seed() {
        let before = Seeded::default().hash_one("name");
        seed(1, 2);
        let one = Seeded::default().hash_one("name");
        seed(3, 4);
        let other = Seeded::default().hash_one("name");
        assert_ne!(one, other, "another seed, another hash");
        seed(1, 2);
        assert_eq!(Seeded::default().hash_one("name"), one);
        assert_ne!(before, one, "the platform's keys are not (1, 2)");
        let mut m: HashMap<&str, u32> = HashMap::default();
        m.insert("a", 1);
        assert_eq!(m.get("a"), Some(&1));
    }
}
