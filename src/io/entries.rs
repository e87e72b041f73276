//! Files from a drop: plain files, or folders walked through the File and Directory Entries API.

use js_sys::{Array, Promise};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{DataTransfer, File, FileSystemDirectoryEntry, FileSystemEntry, FileSystemFileEntry};

use super::blob::js_error;

/// A file to open: its path (relative to the folder dropped or picked) and its contents.
#[derive(Clone, Debug)]
pub struct Input {
    pub path: String,
    pub blob: web_sys::Blob,
}

impl Input {
    /// A picked or dropped `File`, named by its relative path when it came from a folder.
    pub fn from_file(f: &File) -> Input {
        let rel =
            js_sys::Reflect::get(f, &"webkitRelativePath".into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
        let path = if rel.is_empty() { f.name() } else { rel };
        Input { path, blob: f.clone().into() }
    }
}

/// The files of a `FileList` (an `<input type=file>`'s selection).
pub fn from_file_list(list: &web_sys::FileList) -> Vec<Input> {
    (0..list.length()).filter_map(|i| list.get(i)).map(|f| Input::from_file(&f)).collect()
}

/// Everything dropped: folders are walked (all levels); plain files are taken as they are.
pub async fn from_drop(dt: &DataTransfer) -> Result<Vec<Input>, String> {
    let items = dt.items();
    let mut entries = Vec::new();
    let mut loose = Vec::new();
    for i in 0..items.length() {
        let Some(item) = items.get(i) else { continue };
        if item.kind() != "file" {
            continue;
        }
        match item.webkit_get_as_entry().ok().flatten() {
            Some(e) if e.is_directory() => entries.push(e),
            _ => {
                if let Some(f) = item.get_as_file().ok().flatten() {
                    loose.push(Input::from_file(&f));
                }
            }
        }
    }
    if entries.is_empty() && loose.is_empty() {
        if let Some(files) = dt.files() {
            return Ok(from_file_list(&files));
        }
    }
    for e in entries {
        walk(e, &mut loose).await?;
    }
    Ok(loose)
}

async fn walk(root: FileSystemEntry, out: &mut Vec<Input>) -> Result<(), String> {
    let mut stack = vec![root];
    while let Some(entry) = stack.pop() {
        if entry.is_directory() {
            let dir: FileSystemDirectoryEntry = entry.unchecked_into();
            let reader = dir.create_reader();
            loop {
                // readEntries returns at most ~100 entries per call: repeat until empty.
                let batch = JsFuture::from(Promise::new(&mut |resolve, reject| {
                    if let Err(e) = reader.read_entries_with_callback_and_callback(&resolve, &reject) {
                        let _ = reject.call1(&JsValue::NULL, &e);
                    }
                }))
                .await
                .map_err(js_error)?;
                let batch: Array = batch.unchecked_into();
                if batch.length() == 0 {
                    break;
                }
                stack.extend(batch.iter().map(|e| e.unchecked_into::<FileSystemEntry>()));
            }
        } else if entry.is_file() {
            let path = entry.full_path().trim_start_matches('/').to_owned();
            let fe: FileSystemFileEntry = entry.unchecked_into();
            let file = JsFuture::from(Promise::new(&mut |resolve, reject| {
                fe.file_with_callback_and_callback(&resolve, &reject);
            }))
            .await
            .map_err(js_error)?;
            let file: File = file.unchecked_into();
            out.push(Input { path, blob: file.into() });
        }
    }
    Ok(())
}
