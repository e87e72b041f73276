//! The records inside a torch tar archive's members, as torch's `legacy_load` reads them:
//! - `storages`: a pickled count; per storage a pickled `(key, location, storage type)`, an
//!   `i64` element count and the raw elements; then a pickled list of views
//!   `(key, root key, element offset, elements)`;
//! - `tensors`: a pickled count; per tensor a pickled `(key, storage key, tensor type)`, then an
//!   `i32` dimension count, 4 unused bytes, the sizes, the strides and the storage offset (all
//!   `i64`);
//! - `pickle`: the object, naming tensors and storages by persistent ids that are their keys.

use super::machine::{Id, Node, Tree};
use super::tar::python_int;

/// Most dimensions a tensor record may give.
pub const MAX_DIMS: usize = 64;

/// A key as `torch.load` looks it up (`int(saved_id)`): an integer as its decimal text; a
/// string holding one, the same; any other string as itself.
pub fn key(tree: &Tree, id: Id) -> Option<String> {
    match tree.get(id)? {
        Node::Int(v) => Some(v.to_string()),
        Node::Str(s) => Some(python_int(s, 10).map_or_else(|| s.clone(), |v| v.to_string())),
        _ => None,
    }
}

/// A storage record: its key, its location and its storage type's name (`FloatStorage`).
pub fn storage(tree: &Tree) -> Option<(String, String, String)> {
    let items = tree.items(tree.root?)?;
    let [k, location, kind] = items else { return None };
    let type_name = match tree.get(*kind)? {
        Node::Global { name, .. } => name.clone(),
        _ => return None,
    };
    Some((key(tree, *k)?, tree.str(*location).unwrap_or("?").to_owned(), type_name))
}

/// A tensor record: its key and its storage's key.
pub fn tensor(tree: &Tree) -> Option<(String, String)> {
    let items = tree.items(tree.root?)?;
    let [k, storage, _type] = items else { return None };
    Some((key(tree, *k)?, key(tree, *storage)?))
}

/// The storage views: `(key, root key, element offset, elements)` each.
pub fn views(tree: &Tree) -> Option<Vec<(String, String, u64, u64)>> {
    let mut out = Vec::new();
    for &v in tree.items(tree.root?)? {
        let [k, root, offset, numel] = tree.items(v)? else { return None };
        let n = |id: Id| tree.int(id).and_then(|v| u64::try_from(v).ok());
        out.push((key(tree, *k)?, key(tree, *root)?, n(*offset)?, n(*numel)?));
    }
    Some(out)
}

/// A tensor's layout as the bytes after its record give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Vec<u64>,
    pub strides: Vec<u64>,
    pub storage_offset: u64,
    /// Bytes the layout took.
    pub len: usize,
}

/// The layout at the start of `b`; `Err` says why there is none (cut short, or a count or size
/// torch would refuse).
pub fn layout(b: &[u8]) -> Result<Layout, String> {
    let i64_at = |at: usize| -> Result<i64, String> {
        let bytes = b.get(at..at + 8).ok_or("the member ends inside a tensor's layout")?;
        Ok(i64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    };
    let ndim = i32::from_le_bytes(b.get(..4).ok_or("the member ends inside a tensor's layout")?.try_into().expect("4"));
    let ndim = usize::try_from(ndim).ok().filter(|&n| n <= MAX_DIMS).ok_or(format!("{ndim} dimensions"))?;
    let mut at = 8;
    let mut read = |what: &str| -> Result<Vec<u64>, String> {
        let mut v = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            let x = i64_at(at)?;
            v.push(u64::try_from(x).map_err(|_| format!("a negative {what} ({x})"))?);
            at += 8;
        }
        Ok(v)
    };
    let shape = read("size")?;
    let strides = read("stride")?;
    let offset = i64_at(at)?;
    let storage_offset = u64::try_from(offset).map_err(|_| format!("a negative storage offset ({offset})"))?;
    Ok(Layout { shape, strides, storage_offset, len: at + 8 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pickle::machine::run;

    #[test]
    fn records_read_as_torch_writes_them() {
        // (140, 'cpu', torch.FloatStorage), protocol 2.
        let rec = b"\x80\x02K\x8cX\x03\x00\x00\x00cpuq\x00ctorch\nFloatStorage\nq\x01\x87q\x02.";
        let t = run(rec, 0);
        assert_eq!(storage(&t), Some(("140".into(), "cpu".into(), "FloatStorage".into())));
        // ('7', 140, torch.FloatTensor): a string key reads as the integer it holds.
        let rec = b"\x80\x02X\x01\x00\x00\x007K\x8cctorch\nFloatTensor\n\x87.";
        assert_eq!(tensor(&run(rec, 0)), Some(("7".into(), "140".into())));
        let views_pickle = b"\x80\x02](K\x01K\x8cK\x02tq\x01a.";
        assert_eq!(views(&run(views_pickle, 0)), None, "three items are not a view");
        let views_pickle = b"\x80\x02](K\x01K\x8cK\x02K\x03tq\x01a.";
        assert_eq!(views(&run(views_pickle, 0)), Some(vec![("1".into(), "140".into(), 2, 3)]));
    }

    #[test]
    fn layouts_are_bounded_and_never_negative() {
        let mut b = 2i32.to_le_bytes().to_vec();
        b.extend([0; 4]);
        for v in [2i64, 3, 3, 1, 5] {
            b.extend(v.to_le_bytes());
        }
        assert_eq!(layout(&b), Ok(Layout { shape: vec![2, 3], strides: vec![3, 1], storage_offset: 5, len: 48 }));
        assert!(layout(&b[..47]).unwrap_err().contains("ends inside"));
        let mut neg = b.clone();
        neg[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        assert!(layout(&neg).unwrap_err().contains("negative size"));
        let mut many = b.clone();
        many[..4].copy_from_slice(&65i32.to_le_bytes());
        assert_eq!(layout(&many), Err("65 dimensions".into()));
        many[..4].copy_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(layout(&many), Err("-1 dimensions".into()));
    }
}
