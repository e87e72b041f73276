//! The viewer's shared state (provided as context) and the actions that change it.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::engine::model::Checkpoint;
use crate::engine::viewer::{permalink, permalink_tensor};
use crate::io::browser;
use crate::io::entries::Input;
use crate::io::open::{open_inputs, OpenProgress};
use crate::io::{BlobSource, Cancel, DriveError};

/// The built-in samples shipped in `www/samples/`; the first opens on load.
pub const SAMPLES: [&str; 3] = ["gguf_v3_le.gguf", "gguf_all_types.gguf", "st_all_numpy_dtypes.safetensors"];

/// The views of an open checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Summary,
    Tensors,
    Metadata,
    Findings,
}

impl Tab {
    pub const ALL: [Tab; 4] = [Tab::Summary, Tab::Tensors, Tab::Metadata, Tab::Findings];
    pub fn label(self) -> &'static str {
        match self {
            Tab::Summary => "Summary",
            Tab::Tensors => "Tensors",
            Tab::Metadata => "Metadata",
            Tab::Findings => "Findings",
        }
    }
    pub fn id(self) -> &'static str {
        match self {
            Tab::Summary => "summary",
            Tab::Tensors => "tensors",
            Tab::Metadata => "metadata",
            Tab::Findings => "findings",
        }
    }
}

/// Everything the components share.
#[derive(Clone, Copy)]
pub struct AppState {
    pub cp: RwSignal<Option<Arc<Checkpoint>>>,
    /// Where the open checkpoint came from ("sample: x.gguf", "3 files").
    pub label: RwSignal<String>,
    /// The files of the open checkpoint by path (Blobs cannot leave the main thread).
    pub sources: StoredValue<Vec<(String, BlobSource)>, LocalStorage>,
    pub loading: RwSignal<Option<OpenProgress>>,
    pub error: RwSignal<Option<String>>,
    pub tab: RwSignal<Tab>,
    /// The tensor shown in the detail panel.
    pub selected: RwSignal<Option<String>>,
    open_cancel: StoredValue<Cancel, LocalStorage>,
}

impl AppState {
    pub fn new() -> Self {
        AppState {
            cp: RwSignal::new(None),
            label: RwSignal::new(String::new()),
            sources: StoredValue::new_local(Vec::new()),
            loading: RwSignal::new(None),
            error: RwSignal::new(None),
            tab: RwSignal::new(Tab::Summary),
            selected: RwSignal::new(None),
            open_cancel: StoredValue::new_local(Cancel::new()),
        }
    }

    /// The shared state from context.
    pub fn get() -> Self {
        expect_context::<AppState>()
    }

    /// The source of file `file` of the open checkpoint.
    pub fn source(&self, file: usize) -> Option<BlobSource> {
        let path =
            self.cp.with_untracked(|cp| cp.as_ref().and_then(|cp| cp.files.get(file)).map(|f| f.path.clone()))?;
        self.sources.with_value(|s| s.iter().find(|(p, _)| *p == path).map(|(_, s)| s.clone()))
    }

    /// Open `inputs` (replacing what is open) in the background.
    pub fn open(self, mut inputs: Vec<Input>, label: String) {
        self.open_cancel.with_value(Cancel::cancel);
        let cancel = Cancel::new();
        self.open_cancel.set_value(cancel.clone());
        self.error.set(None);
        if inputs.is_empty() {
            self.error.set(Some("nothing to open: no files were given".into()));
            return;
        }
        spawn_local(async move {
            let result = open_inputs(&mut inputs, &cancel, |p| self.loading.set(Some(p))).await;
            match result {
                Ok(cp) => {
                    self.sources
                        .set_value(inputs.iter().map(|i| (i.path.clone(), BlobSource::new(i.blob.clone()))).collect());
                    self.selected.set(None);
                    self.label.set(label);
                    self.cp.set(Some(Arc::new(cp)));
                    self.loading.set(None);
                    self.follow_hash();
                }
                Err(DriveError::Cancelled) => {}
                Err(e) => {
                    self.loading.set(None);
                    self.error.set(Some(format!("could not open the files: {e}")));
                }
            }
        });
    }

    /// Open one of the built-in samples.
    pub fn open_sample(self, name: &'static str) {
        spawn_local(async move {
            match browser::fetch_blob(&format!("samples/{name}")).await {
                Ok(blob) => self.open(vec![Input { path: name.to_owned(), blob }], format!("sample: {name}")),
                Err(e) => self.error.set(Some(format!("could not load the sample: {e}"))),
            }
        });
    }

    /// Show tensor `name` in the detail panel and make it the permalink.
    pub fn select(self, name: Option<String>) {
        browser::set_hash(&name.as_deref().map(permalink).unwrap_or_default());
        self.selected.set(name);
    }

    /// Select the tensor the location hash names, when the open checkpoint has it.
    pub fn follow_hash(self) {
        let Some(name) = permalink_tensor(&browser::hash()) else { return };
        let exists = self.cp.with_untracked(|cp| cp.as_ref().is_some_and(|cp| cp.tensor(&name).is_some()));
        if exists {
            self.tab.set(Tab::Tensors);
            self.selected.set(Some(name));
        }
    }
}

impl Default for AppState {
    fn default() -> Self {
        AppState::new()
    }
}

/// A shared value compared by identity, so memos over big lists do not compare them item by item.
#[derive(Debug)]
pub struct Shared<T>(pub Arc<T>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
