//! Reading a page of a metadata array's items from the file holding it.

use super::OnFile;
use crate::engine::gguf::{Array, ArrayItemsDecoder};

/// Items of one array, read from one file.
pub type ArrayItemsJob = OnFile<ArrayItemsDecoder>;

/// Items `first..first + count` of `array`, stored in file `file` (big-endian when `big_endian`).
pub fn array_items_job(array: &Array, file: usize, big_endian: bool, first: u64, count: u64) -> ArrayItemsJob {
    OnFile { file, decoder: ArrayItemsDecoder::new(array, big_endian, first, count) }
}
