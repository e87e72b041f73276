//! Opening dropped or picked files as one checkpoint: the browser twin of `cli::open`.

use super::blob::BlobSource;
use super::driver::{drive, Cancel, DriveError, DriveOpts};
use super::entries::Input;
use crate::engine::model::{Checkpoint, FileInfo};
use crate::engine::open::FileDecoder;
use crate::engine::shards::assemble;

/// How far opening has come.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenProgress {
    pub files_done: usize,
    pub files: usize,
    pub bytes_read: u64,
}

/// Read the headers of every input and assemble one checkpoint. Inputs are sorted by path
/// first, as the CLI sorts a folder's children.
pub async fn open_inputs(
    inputs: &mut [Input],
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<Checkpoint, DriveError> {
    inputs.sort_by(|a, b| a.path.cmp(&b.path));
    let mut parsed = Vec::with_capacity(inputs.len());
    let mut p = OpenProgress { files: inputs.len(), ..OpenProgress::default() };
    progress(p);
    for input in inputs.iter() {
        let src = BlobSource::new(input.blob.clone());
        let base = p.bytes_read;
        let decoder = FileDecoder::new(&input.path, src.len());
        let out = drive(decoder, &src, DriveOpts::default(), cancel, |_, fed| {
            progress(OpenProgress { bytes_read: base + fed, ..p });
        })
        .await?;
        p.files_done += 1;
        p.bytes_read = base + src.bytes_read();
        progress(p);
        parsed.push((FileInfo { path: input.path.clone(), size: src.len() }, out));
    }
    Ok(assemble(parsed))
}
