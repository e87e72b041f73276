//! The GGML tensor types: ids, names, block sizes and bytes per block (ggml's `ggml.h` enum and
//! the `sizeof` of its block structs).

/// A GGML tensor type id as stored in a GGUF tensor info. Any `u32` is representable; ids
/// outside the table are shown as `type N` with decoding disabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GgmlType(pub u32);

/// What the table knows of one id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A live type: `block_elems` elements are stored in `block_bytes` bytes.
    Live { block_elems: u64, block_bytes: u64 },
    /// An id ggml once used and removed; files holding it cannot be loaded.
    Removed,
}

/// `(id, name, kind)` for every id ggml has assigned, in id order.
const TABLE: &[(u32, &str, Kind)] = &[
    (0, "F32", live(1, 4)),
    (1, "F16", live(1, 2)),
    (2, "Q4_0", live(32, 18)),
    (3, "Q4_1", live(32, 20)),
    (4, "Q4_2", Kind::Removed),
    (5, "Q4_3", Kind::Removed),
    (6, "Q5_0", live(32, 22)),
    (7, "Q5_1", live(32, 24)),
    (8, "Q8_0", live(32, 34)),
    (9, "Q8_1", live(32, 36)),
    (10, "Q2_K", live(256, 84)),
    (11, "Q3_K", live(256, 110)),
    (12, "Q4_K", live(256, 144)),
    (13, "Q5_K", live(256, 176)),
    (14, "Q6_K", live(256, 210)),
    (15, "Q8_K", live(256, 292)),
    (16, "IQ2_XXS", live(256, 66)),
    (17, "IQ2_XS", live(256, 74)),
    (18, "IQ3_XXS", live(256, 98)),
    (19, "IQ1_S", live(256, 50)),
    (20, "IQ4_NL", live(32, 18)),
    (21, "IQ3_S", live(256, 110)),
    (22, "IQ2_S", live(256, 82)),
    (23, "IQ4_XS", live(256, 136)),
    (24, "I8", live(1, 1)),
    (25, "I16", live(1, 2)),
    (26, "I32", live(1, 4)),
    (27, "I64", live(1, 8)),
    (28, "F64", live(1, 8)),
    (29, "IQ1_M", live(256, 56)),
    (30, "BF16", live(1, 2)),
    (31, "Q4_0_4_4", Kind::Removed),
    (32, "Q4_0_4_8", Kind::Removed),
    (33, "Q4_0_8_8", Kind::Removed),
    (34, "TQ1_0", live(256, 54)),
    (35, "TQ2_0", live(256, 66)),
    (36, "IQ4_NL_4_4", Kind::Removed),
    (37, "IQ4_NL_4_8", Kind::Removed),
    (38, "IQ4_NL_8_8", Kind::Removed),
    (39, "MXFP4", live(32, 17)),
    (40, "NVFP4", live(64, 36)),
    (41, "Q1_0", live(128, 18)),
    (42, "Q2_0", live(64, 18)),
];

const fn live(block_elems: u64, block_bytes: u64) -> Kind {
    Kind::Live { block_elems, block_bytes }
}

/// Number of type ids ggml has assigned (`GGML_TYPE_COUNT`).
pub const TYPE_COUNT: u32 = TABLE.len() as u32;

impl GgmlType {
    pub const F32: GgmlType = GgmlType(0);
    pub const F16: GgmlType = GgmlType(1);
    pub const BF16: GgmlType = GgmlType(30);

    /// Every id in the table, removed ones included.
    pub fn all() -> impl Iterator<Item = GgmlType> {
        TABLE.iter().map(|&(id, _, _)| GgmlType(id))
    }

    /// The type with the spec spelling `name` (`"Q4_K"`), case-insensitively.
    pub fn from_name(name: &str) -> Option<GgmlType> {
        TABLE.iter().find(|(_, n, _)| n.eq_ignore_ascii_case(name)).map(|&(id, _, _)| GgmlType(id))
    }

    fn entry(self) -> Option<&'static (u32, &'static str, Kind)> {
        TABLE.get(self.0 as usize)
    }

    /// What the table says of this id, or `None` for an id ggml never assigned.
    pub fn kind(self) -> Option<Kind> {
        self.entry().map(|e| e.2)
    }

    /// `(elements, bytes)` per block for a live type.
    pub fn block(self) -> Option<(u64, u64)> {
        match self.kind()? {
            Kind::Live { block_elems, block_bytes } => Some((block_elems, block_bytes)),
            Kind::Removed => None,
        }
    }

    /// The spec name (`"Q4_K"`), or `type N` for an id outside the table.
    pub fn name(self) -> String {
        match self.entry() {
            Some(e) => e.1.to_owned(),
            None => format!("type {}", self.0),
        }
    }

    /// Bytes that `elems` elements take, or `None` when the type has no block layout, `elems`
    /// is not a whole number of blocks, or the size overflows.
    pub fn nbytes(self, elems: u64) -> Option<u64> {
        let (block_elems, block_bytes) = self.block()?;
        if !elems.is_multiple_of(block_elems) {
            return None;
        }
        (elems / block_elems).checked_mul(block_bytes)
    }

    /// Whether this is a plain float type (F32, F16, BF16, F64), kept unquantized.
    pub fn is_float(self) -> bool {
        matches!(self.0, 0 | 1 | 28 | 30)
    }

    /// Whether this is a plain integer type (I8..I64).
    pub fn is_integer(self) -> bool {
        (24..=27).contains(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_id() {
        for (i, (id, _, _)) in TABLE.iter().enumerate() {
            assert_eq!(i as u32, *id);
        }
        assert_eq!(TYPE_COUNT, 43);
    }

    #[test]
    fn sizes_match_the_block_structs() {
        assert_eq!(GgmlType(9).block(), Some((32, 36)), "Q8_1 is two f16 + 32 int8");
        assert_eq!(GgmlType(12).nbytes(512), Some(288));
        assert_eq!(GgmlType(12).nbytes(100), None);
        assert_eq!(GgmlType(4).block(), None);
        assert_eq!(GgmlType(43).name(), "type 43");
        assert_eq!(GgmlType::from_name("iq4_xs"), Some(GgmlType(23)));
    }
}
