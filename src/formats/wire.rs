//! A compact little-endian byte form for the results work orders send back across threads and
//! Web Workers (see [`crate::job::work`]): fixed-width numbers and length-prefixed lists, read back
//! with every length checked against the bytes there are.

/// Appends numbers to a byte buffer.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.0.push(u8::from(v));
        self
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    /// The non-zero entries of `counts` (index, count), prefixed by their number and `counts`' length.
    pub fn sparse(&mut self, counts: &[u64]) -> &mut Self {
        let nonzero = counts.iter().filter(|&&c| c != 0).count();
        let entries = counts.iter().enumerate().filter(|(_, &c)| c != 0).map(|(i, &c)| (i, c));
        self.sparse_entries_n(counts.len(), nonzero, entries)
    }
    /// [`Writer::sparse`] of a list of `len` counts given as its non-zero `(index, count)`
    /// entries, in increasing index order.
    pub fn sparse_entries(&mut self, len: usize, entries: impl ExactSizeIterator<Item = (usize, u64)>) -> &mut Self {
        self.sparse_entries_n(len, entries.len(), entries)
    }
    fn sparse_entries_n(&mut self, len: usize, n: usize, entries: impl Iterator<Item = (usize, u64)>) -> &mut Self {
        self.u64(len as u64).u64(n as u64);
        for (i, c) in entries {
            self.u64(i as u64).u64(c);
        }
        self
    }
}

/// Reads what a [`Writer`] wrote; `None` once the bytes run out or do not fit.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    pub fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*head))
    }
    pub fn f64(&mut self) -> Option<f64> {
        self.u64().map(f64::from_bits)
    }
    pub fn bool(&mut self) -> Option<bool> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b != 0)
    }
    pub fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.u64()?).ok()?;
        let b = self.0.get(..n)?.to_vec();
        self.0 = &self.0[n..];
        Some(b)
    }
    /// A list of `u64` written by [`Writer::sparse`], at most `max_len` long.
    pub fn sparse(&mut self, max_len: usize) -> Option<Vec<u64>> {
        let (len, entries) = self.sparse_entries(max_len)?;
        let mut out = vec![0u64; len];
        for (i, c) in entries {
            out[i] = c;
        }
        Some(out)
    }
    /// What [`Writer::sparse`] wrote, as the list's length (at most `max_len`) and its
    /// `(index, count)` entries: indices strictly increasing, each below the length.
    pub fn sparse_entries(&mut self, max_len: usize) -> Option<(usize, Vec<(usize, u64)>)> {
        let len = usize::try_from(self.u64()?).ok().filter(|&l| l <= max_len)?;
        let nonzero = self.u64()?;
        // Each entry takes 16 bytes: a count the bytes cannot hold is refused before allocating.
        if nonzero > self.0.len() as u64 / 16 {
            return None;
        }
        let mut entries = Vec::with_capacity(nonzero as usize);
        for _ in 0..nonzero {
            let i = usize::try_from(self.u64()?).ok().filter(|&i| i < len)?;
            if entries.last().is_some_and(|&(last, _)| i <= last) {
                return None;
            }
            entries.push((i, self.u64()?));
        }
        Some((len, entries))
    }
    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
