//! Reading a page of a metadata array's items from the file holding it.

use super::OnFile;
use crate::gguf::{Array, ArrayItemsDecoder};

/// Items of one array, read from one file.
pub type ArrayItemsJob = OnFile<ArrayItemsDecoder>;

/// Items `first..first + count` of `array`, stored in file `file` (big-endian when `big_endian`);
/// with `query`, every item is searched and the first `count` matches kept.
pub fn array_items_job(
    array: &Array,
    file: usize,
    big_endian: bool,
    first: u64,
    count: u64,
    query: Option<&str>,
) -> ArrayItemsJob {
    let decoder = match query {
        None => ArrayItemsDecoder::new(array, big_endian, first, count),
        Some(q) => ArrayItemsDecoder::new(array, big_endian, 0, array.len)
            .matching(q, usize::try_from(count).unwrap_or(usize::MAX)),
    };
    OnFile { file, decoder }
}
