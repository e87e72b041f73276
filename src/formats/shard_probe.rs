//! How many bytes the first request of each remote file asks for, so that a whole header comes
//! in one round trip without fetching much past it. A shard's header size is predicted from
//! the tensor names its index gives it (an entry is its name plus a few dozen bytes of dtype,
//! shape and offsets), and the prediction is calibrated by every shard read; so the shards of a
//! set are all asked for at once, none waiting for a first one to tell the size.

use crate::safetensors::Index;

/// The first request of a file nothing is known of: the sniff and small headers are served
/// without a second round trip, while a big header costs at most this much more than its own
/// bytes (16 KiB probes doubled the bytes to open a sharded set).
pub const PROBE_BYTES: u64 = 4 << 10;

/// Largest first request.
pub const MAX_PROBE_BYTES: u64 = 8 << 20;

/// Bytes of an entry besides its name before any shard was read: quotes, dtype, a four-dimension
/// shape and two twelve-digit offsets (`,"":{"dtype":"F8_E4M3","shape":[…],"data_offsets":[…]}`).
const ENTRY_BYTES: u64 = 120;

/// Room for `__metadata__` and the length prefix before any shard was read.
const SLACK_BYTES: u64 = 4 << 10;

/// Largest per-entry size learned from a shard.
const MAX_PER_ENTRY: u64 = 4 * ENTRY_BYTES;

/// What is known of one file before its first request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Ask for this many bytes.
    Bytes(u64),
    /// A shard the index gives `count` tensors whose names take `name_bytes`.
    Shard { name_bytes: u64, count: u64 },
}

impl Expect {
    /// Every shard of `index`, in the order of [`Index::shards`].
    pub fn shards_of(index: &Index) -> Vec<Expect> {
        let mut shards = vec![Expect::Shard { name_bytes: 0, count: 0 }; index.shards.len()];
        for (name, shard) in &index.weight_map {
            if let Some(Expect::Shard { name_bytes, count }) = shards.get_mut(*shard as usize) {
                *name_bytes = name_bytes.saturating_add(name.len() as u64);
                *count += 1;
            }
        }
        shards
    }
}

/// First-request sizes for a list of files, learning from the headers read.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardProbes {
    files: Vec<Expect>,
    /// The most header bytes per entry besides its name seen in a shard read, metadata and
    /// length prefix spread over its entries; at most [`MAX_PER_ENTRY`], so that one odd shard
    /// (a few tensors under a large `__metadata__`) cannot make every later probe large.
    per_entry: Option<u64>,
}

impl ShardProbes {
    /// Probes for `files`, nothing learned yet.
    pub fn new(files: Vec<Expect>) -> Self {
        ShardProbes { files, per_entry: None }
    }

    /// Bytes to ask for first from file `i` (a multiple of 4 KiB, at least [`PROBE_BYTES`],
    /// at most [`MAX_PROBE_BYTES`]).
    pub fn probe(&self, i: usize) -> u64 {
        let want = match self.files.get(i) {
            Some(&Expect::Bytes(b)) => b,
            Some(&Expect::Shard { name_bytes, count }) => match self.per_entry {
                // A quarter more than the widest shard read: shapes and offsets vary a little.
                Some(k) => {
                    let predicted = name_bytes.saturating_add(k.saturating_mul(count));
                    predicted.saturating_add(predicted / 4)
                }
                None => name_bytes.saturating_add(ENTRY_BYTES.saturating_mul(count)).saturating_add(SLACK_BYTES),
            },
            None => PROBE_BYTES,
        };
        want.clamp(PROBE_BYTES, MAX_PROBE_BYTES).next_multiple_of(4096)
    }

    /// File `i` turned out to have `header_bytes` of header (length prefix included).
    pub fn learn(&mut self, i: usize, header_bytes: u64) {
        let Some(&Expect::Shard { name_bytes, count }) = self.files.get(i) else { return };
        if count == 0 {
            return;
        }
        let k = header_bytes.saturating_sub(name_bytes).div_ceil(count).min(MAX_PER_ENTRY);
        self.per_entry = Some(self.per_entry.map_or(k, |was| was.max(k)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors header of `names`, as `safetensors` writes it, with its length prefix.
    fn header_bytes(names: &[String]) -> u64 {
        let mut json = String::from(r#"{"__metadata__":{"format":"pt"}"#);
        for (i, n) in names.iter().enumerate() {
            let at = i * 8_388_608;
            json.push_str(&format!(
                r#","{n}":{{"dtype":"BF16","shape":[2048,2048],"data_offsets":[{at},{}]}}"#,
                at + 8_388_608
            ));
        }
        json.push('}');
        8 + json.len() as u64
    }

    fn index(shards: &[Vec<String>]) -> Index {
        let mut ix = Index::default();
        for (s, names) in shards.iter().enumerate() {
            ix.shards.push(format!("model-{s:05}.safetensors"));
            ix.weight_map.extend(names.iter().map(|n| (n.clone(), s as u32)));
        }
        ix
    }

    fn layer(l: usize, n: usize) -> Vec<String> {
        (0..n).map(|j| format!("model.layers.{l}.mlp.experts.{j}.down_proj.weight")).collect()
    }

    #[test]
    fn every_header_fits_its_first_request_before_and_after_calibration() {
        let shards: Vec<Vec<String>> = vec![layer(0, 40), layer(1, 300), layer(2, 1), layer(3, 40), layer(4, 2000)];
        let mut probes = ShardProbes::new(Expect::shards_of(&index(&shards)));
        for (i, names) in shards.iter().enumerate() {
            let real = header_bytes(names);
            assert!(probes.probe(i) >= real, "shard {i} uncalibrated: {} < {real}", probes.probe(i));
        }
        probes.learn(0, header_bytes(&shards[0]));
        for (i, names) in shards.iter().enumerate() {
            let real = header_bytes(names);
            let p = probes.probe(i);
            assert!(p >= real, "shard {i} calibrated: {p} < {real}");
            // Calibrated, the over-read is the quarter's margin and the 4 KiB rounding.
            assert!(p <= (real + real / 4 + 8192).max(PROBE_BYTES), "shard {i}: {p} for {real}");
        }
    }

    #[test]
    fn probes_are_bounded_and_files_without_names_keep_their_size() {
        let mut probes = ShardProbes::new(vec![
            Expect::Bytes(100),
            Expect::Bytes(MAX_PROBE_BYTES),
            Expect::Shard { name_bytes: u64::MAX, count: u64::MAX },
            Expect::Shard { name_bytes: 0, count: 0 },
        ]);
        assert_eq!(probes.probe(0), PROBE_BYTES);
        assert_eq!(probes.probe(1), MAX_PROBE_BYTES);
        assert_eq!(probes.probe(2), MAX_PROBE_BYTES, "saturates, then clamps");
        assert_eq!(probes.probe(3), PROBE_BYTES, "no names: room for metadata");
        assert_eq!(probes.probe(9), PROBE_BYTES, "a file not listed");
        probes.learn(0, 1 << 30);
        probes.learn(3, 1 << 30);
        assert_eq!(probes.per_entry, None, "only shards with names calibrate");
        probes.learn(2, 5);
        assert_eq!(probes.per_entry, Some(0));
        assert_eq!(probes.probe(3), PROBE_BYTES);
    }

    #[test]
    fn calibration_keeps_the_widest_shard() {
        let mut probes = ShardProbes::new(vec![
            Expect::Shard { name_bytes: 1000, count: 10 },
            Expect::Shard { name_bytes: 1000, count: 10 },
        ]);
        probes.learn(0, 2000);
        assert_eq!(probes.per_entry, Some(100));
        probes.learn(1, 1500);
        assert_eq!(probes.per_entry, Some(100));
        probes.learn(1, 3000);
        assert_eq!(probes.per_entry, Some(200));
        // A shard of few tensors under a large metadata block is held to the cap.
        probes.learn(1, 1 << 30);
        assert_eq!(probes.per_entry, Some(MAX_PER_ENTRY));
        assert_eq!(probes.probe(0), 8192);
    }
}
