//! The viewer's shared state (provided as context) and the actions that change it.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::engine::digest::{Digest, Digesting};
use crate::engine::hub::{parse_repo, RepoRef, DEFAULT_ENDPOINT};
use crate::engine::model::Checkpoint;
use crate::engine::variants::Variant;
use crate::engine::viewer::{permalink, permalink_tensor};
use crate::io::browser;
use crate::io::driver::{yield_now, MAIN_THREAD_TENSORS};
use crate::io::entries::Input;
use crate::io::hub::read_repo;
use crate::io::open::{open_grouped, open_sources, open_urls, opened_as, OpenProgress, OpenedAs};
use crate::io::{BlobSource, Cancel, Meter, RunError, Source};

/// A built-in sample shipped in `www/samples/` (written by `scripts/make_samples.py`, or a
/// test fixture): its label and its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub label: &'static str,
    pub files: &'static [&'static str],
}

/// The built-in samples; the first opens on load.
pub const SAMPLES: [Sample; 5] = [
    Sample { label: "tensorscope-sample-16L-Q4_K_M.gguf", files: &["tensorscope-sample-16L-Q4_K_M.gguf"] },
    Sample {
        label: "tensorscope-sample-st (2 shards)",
        files: &[
            "tensorscope-sample-st/model.safetensors.index.json",
            "tensorscope-sample-st/config.json",
            "tensorscope-sample-st/model-00001-of-00002.safetensors",
            "tensorscope-sample-st/model-00002-of-00002.safetensors",
        ],
    },
    Sample { label: "gguf_v3_le.gguf", files: &["gguf_v3_le.gguf"] },
    Sample { label: "gguf_all_types.gguf", files: &["gguf_all_types.gguf"] },
    Sample { label: "st_all_numpy_dtypes.safetensors", files: &["st_all_numpy_dtypes.safetensors"] },
];

/// The views of an open checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Summary,
    Tensors,
    Metadata,
    Tokenizer,
    Findings,
    Check,
    Diff,
}

impl Tab {
    pub const ALL: [Tab; 7] =
        [Tab::Summary, Tab::Tensors, Tab::Metadata, Tab::Tokenizer, Tab::Findings, Tab::Check, Tab::Diff];
    /// The tabs of the compact embed mode.
    pub const EMBED: [Tab; 2] = [Tab::Summary, Tab::Tensors];
    pub fn label(self) -> &'static str {
        match self {
            Tab::Summary => "Summary",
            Tab::Tensors => "Tensors",
            Tab::Metadata => "Metadata",
            Tab::Tokenizer => "Tokenizer",
            Tab::Findings => "Findings",
            Tab::Check => "Check",
            Tab::Diff => "Compare",
        }
    }
    pub fn id(self) -> &'static str {
        match self {
            Tab::Summary => "summary",
            Tab::Tensors => "tensors",
            Tab::Metadata => "metadata",
            Tab::Tokenizer => "tokenizer",
            Tab::Findings => "findings",
            Tab::Check => "check",
            Tab::Diff => "diff",
        }
    }
}

/// The digest of `cp`, yielding to the browser between pieces; None once `wanted()` turns
/// false (a newer open began).
async fn digest_of(cp: &Checkpoint, wanted: impl Fn() -> bool) -> Option<Digest> {
    let mut d = Digesting::new(cp);
    loop {
        yield_now().await;
        if !wanted() {
            return None;
        }
        if d.step(MAIN_THREAD_TENSORS) {
            break;
        }
    }
    yield_now().await;
    let d = d.finish();
    yield_now().await;
    wanted().then_some(d)
}

/// What the address bar names once an open is shown (`?url=`, `?sample=`); neither for local files.
#[derive(Default)]
struct Address {
    urls: Vec<String>,
    sample: Option<String>,
}

/// Everything the components share.
#[derive(Clone, Copy)]
pub struct AppState {
    pub cp: RwSignal<Option<Arc<Checkpoint>>>,
    /// The digest of `cp`, set just before it.
    pub digest: RwSignal<Option<Arc<Digest>>>,
    /// Where the open checkpoint came from ("sample: x.gguf", "3 files", a URL).
    pub label: RwSignal<String>,
    /// The byte sources of the open checkpoint's files, aligned with `cp.files` by index.
    pub sources: StoredValue<Vec<Source>, LocalStorage>,
    /// Bytes and requests transferred over the network for the open checkpoint (None: local files).
    pub transferred: RwSignal<Option<(u64, u64)>>,
    /// The compact embed mode (`?embed`): summary, quant mix, tensor table, histogram.
    pub embed: bool,
    pub loading: RwSignal<Option<OpenProgress>>,
    pub error: RwSignal<Option<String>>,
    pub tab: RwSignal<Tab>,
    /// The tensor shown in the detail panel.
    pub selected: RwSignal<Option<String>>,
    /// The checkpoint compared with the open one (the Compare tab), its label and sources.
    pub vs: RwSignal<Option<Arc<Checkpoint>>>,
    pub vs_label: RwSignal<String>,
    pub vs_sources: StoredValue<Vec<Source>, LocalStorage>,
    /// The progress of the open of B under way.
    pub vs_loading: RwSignal<Option<OpenProgress>>,
    vs_cancel: StoredValue<Cancel, LocalStorage>,
    open_cancel: StoredValue<Cancel, LocalStorage>,
    /// Counts opens: the result of an open that is no longer the newest is dropped.
    generation: StoredValue<u64>,
    /// The open whose checkpoint is shown.
    shown: StoredValue<u64>,
    /// The files opened, when they hold several separate models: each checkpoint among them
    /// (the Variants view), the files of each, and the other files.
    pub variants: RwSignal<Option<Arc<Variants>>>,
    variant_files: StoredValue<Vec<Vec<(String, Source)>>, LocalStorage>,
}

/// The checkpoints of files that hold several separate models, and the files beside them.
pub struct Variants {
    pub all: Vec<Variant>,
    pub other: Vec<String>,
    /// Files that could not be read (listed among the other files), each with why.
    pub unreadable: Vec<(String, String)>,
    /// Where they came from ("5 files", a repository at a commit).
    pub label: String,
    /// The repository's address (`?url=`), kept while a variant is open; none for local files.
    pub source: Option<String>,
}

impl AppState {
    pub fn new() -> Self {
        AppState {
            cp: RwSignal::new(None),
            digest: RwSignal::new(None),
            label: RwSignal::new(String::new()),
            sources: StoredValue::new_local(Vec::new()),
            transferred: RwSignal::new(None),
            embed: browser::has_query("embed"),
            loading: RwSignal::new(None),
            error: RwSignal::new(None),
            tab: RwSignal::new(Tab::Summary),
            selected: RwSignal::new(None),
            vs: RwSignal::new(None),
            vs_label: RwSignal::new(String::new()),
            vs_sources: StoredValue::new_local(Vec::new()),
            vs_loading: RwSignal::new(None),
            vs_cancel: StoredValue::new_local(Cancel::new()),
            open_cancel: StoredValue::new_local(Cancel::new()),
            generation: StoredValue::new(0),
            shown: StoredValue::new(0),
            variants: RwSignal::new(None),
            variant_files: StoredValue::new_local(Vec::new()),
        }
    }

    /// The shared state from context.
    pub fn get() -> Self {
        expect_context::<AppState>()
    }

    /// The byte sources of the open checkpoint's files (index = file index).
    pub fn sources(&self) -> Vec<Source> {
        self.sources.get_value()
    }

    /// Begin an open: cancel the one under way, and return this open's cancel flag and number.
    fn start_open(self) -> (Cancel, u64) {
        self.open_cancel.with_value(Cancel::cancel);
        let cancel = Cancel::new();
        self.open_cancel.set_value(cancel.clone());
        self.error.set(None);
        self.generation.update_value(|g| *g += 1);
        (cancel, self.generation.get_value())
    }

    /// Stop the open under way (its requests are aborted); what was shown before stays.
    pub fn cancel_open(self) {
        self.open_cancel.with_value(Cancel::cancel);
        self.generation.update_value(|g| *g += 1);
        self.loading.set(None);
    }

    /// Whether open number `generation` is still the newest.
    fn is_current(self, generation: u64) -> bool {
        self.generation.get_value() == generation
    }

    /// Show open number `generation`'s checkpoint, once its digest is computed (unless a newer
    /// open began meanwhile); `transferred`: its network bytes and requests (None: local). Only
    /// then does the address bar name it: an open that fails or is cancelled leaves the
    /// address of what is still shown.
    async fn opened(
        self,
        generation: u64,
        cp: Checkpoint,
        sources: Vec<Source>,
        label: String,
        transferred: Option<(u64, u64)>,
        address: Address,
    ) {
        let Some(digest) = digest_of(&cp, || self.is_current(generation)).await else { return };
        self.shown.set_value(generation);
        browser::set_query("url", &address.urls);
        browser::set_query("sample", address.sample.as_slice());
        self.transferred.set(transferred);
        self.sources.set_value(sources);
        self.selected.set(None);
        self.label.set(label);
        self.digest.set(Some(Arc::new(digest)));
        self.cp.set(Some(Arc::new(cp)));
        self.loading.set(None);
        self.follow_hash();
    }

    /// Open `inputs` (replacing what is open) in the background. Local files: no network at all.
    pub fn open(self, inputs: Vec<Input>, label: String) {
        let (cancel, generation) = self.start_open();
        self.open_now(inputs, label, Address::default(), cancel, generation);
    }

    fn open_now(self, mut inputs: Vec<Input>, label: String, address: Address, cancel: Cancel, generation: u64) {
        if inputs.is_empty() {
            self.loading.set(None);
            self.error.set(Some("nothing to open: no files were given".into()));
            return;
        }
        crate::engine::sort::sort_by(&mut inputs, |a, b| a.path.cmp(&b.path));
        let files: Vec<(String, Source)> =
            inputs.iter().map(|i| (i.path.clone(), BlobSource::new(i.blob.clone()).into())).collect();
        spawn_local(async move {
            let result = open_grouped(&files, &cancel, self.progress(generation)).await;
            if !self.is_current(generation) {
                return;
            }
            match result {
                Ok(OpenedAs::One(cp, sources)) => {
                    self.variants.set(None);
                    self.opened(generation, cp, sources, label, None, address).await
                }
                Ok(OpenedAs::Variants(all, files, other)) => {
                    self.show_variants(Variants { all, other, unreadable: Vec::new(), label, source: None }, files)
                }
                Err(e) => self.failed("the files", e),
            }
        });
    }

    /// The progress callback of open number `generation`: it shows only while that open is the newest.
    fn progress(self, generation: u64) -> impl FnMut(OpenProgress) {
        move |p| {
            if self.is_current(generation) {
                self.loading.set(Some(p))
            }
        }
    }

    /// An open of `what` that failed: said on the error line (a cancelled one is not).
    fn failed(self, what: &str, e: RunError) {
        if e == RunError::Cancelled {
            return;
        }
        self.loading.set(None);
        let e = match e {
            RunError::Read(m) => m,
            e => e.to_string(),
        };
        self.error.set(Some(format!("could not open {what}: {e}")));
    }

    /// Show the Variants view of `v`, whose checkpoints' files are `files`.
    fn show_variants(self, v: Variants, files: Vec<Vec<(String, Source)>>) {
        self.variant_files.set_value(files);
        self.variants.set(Some(Arc::new(v)));
        self.cp.set(None);
        self.digest.set(None);
        self.selected.set(None);
        self.loading.set(None);
    }

    /// Open variant `i` of the Variants view with every view there is; the list stays, to go
    /// back to.
    pub fn open_variant(self, i: usize) {
        let Some(files) = self.variant_files.with_value(|f| f.get(i).cloned()) else { return };
        let Some((name, source)) = self
            .variants
            .with_untracked(|v| v.as_ref().and_then(|v| Some((v.all.get(i)?.name.clone(), v.source.clone()))))
        else {
            return;
        };
        let (cancel, generation) = self.start_open();
        spawn_local(async move {
            let result = open_sources(&files, &cancel, self.progress(generation)).await;
            if !self.is_current(generation) {
                return;
            }
            match result {
                Ok((cp, sources)) => {
                    let label = format!("variant {name}");
                    let address = Address { urls: source.into_iter().collect(), sample: None };
                    self.opened(generation, cp, sources, label, None, address).await
                }
                Err(e) => self.failed("the variant", e),
            }
        });
    }

    /// Back from a variant to the Variants view.
    pub fn back_to_variants(self) {
        self.generation.update_value(|g| *g += 1);
        self.cp.set(None);
        self.digest.set(None);
        self.selected.set(None);
    }

    /// Open remote files by URL (`hf://` shorthands, an index URL brings its shards) in the
    /// background; only header ranges are fetched.
    pub fn open_urls(self, urls: Vec<String>) {
        let (cancel, generation) = self.start_open();
        self.variants.set(None);
        let urls: Vec<String> = urls.into_iter().map(|u| u.trim().to_owned()).filter(|u| !u.is_empty()).collect();
        if urls.is_empty() {
            self.loading.set(None);
            self.error.set(Some("nothing to open: no URL was given".into()));
            return;
        }
        // While the headers are read, the bytes go to the progress line (at most every 100 ms:
        // a DOM update per response slowed a 500-shard open); once shown, to the transferred
        // line, as long as this checkpoint is the one shown.
        let last_progress = std::cell::Cell::new(f64::NEG_INFINITY);
        let meter = Meter::new(move |bytes, requests| {
            if self.shown.get_value() == generation {
                self.transferred.set(Some((bytes, requests)));
            } else if self.is_current(generation) && crate::io::driver::now_ms() - last_progress.get() >= 100.0 {
                last_progress.set(crate::io::driver::now_ms());
                self.loading.update(|p| {
                    if let Some(p) = p {
                        p.bytes_read = bytes;
                    }
                });
            }
        });
        if let [one] = urls.as_slice() {
            let endpoint = browser::query_values("endpoint").into_iter().next();
            let endpoint = endpoint.unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
            if let Some(repo) = parse_repo(one, &endpoint) {
                let source = one.clone();
                spawn_local(async move { self.open_repo(repo, endpoint, source, meter, cancel, generation).await });
                return;
            }
        }
        spawn_local(async move {
            let result = open_urls(&urls, &meter, &cancel, self.progress(generation)).await;
            if !self.is_current(generation) {
                return;
            }
            match result {
                Ok((cp, sources)) => {
                    let label = match urls.as_slice() {
                        [one] if sources.len() == 1 => one.clone(),
                        [one] => format!("{one} ({} files)", sources.len()),
                        _ => format!("{} URLs ({} files)", urls.len(), sources.len()),
                    };
                    let transferred = Some((meter.bytes(), meter.requests()));
                    let address = Address { urls, sample: None };
                    self.opened(generation, cp, sources, label, transferred, address).await;
                }
                Err(e) => self.failed("the URL", e),
            }
        });
    }

    /// Open a Hub repository (`source` names it): its variants side by side when it holds
    /// several models, else its one checkpoint.
    async fn open_repo(
        self,
        repo: RepoRef,
        endpoint: String,
        source: String,
        meter: Meter,
        cancel: Cancel,
        generation: u64,
    ) {
        let result = read_repo(&repo, &endpoint, &meter, &cancel, self.progress(generation)).await;
        if !self.is_current(generation) {
            return;
        }
        let read = match result {
            Ok(r) => r,
            Err(e) => return self.failed("the repository", e),
        };
        let label = format!("{} at {}", repo.id(), &read.commit[..7]);
        let unreadable = read.unreadable;
        let result = opened_as(read.parsed, read.sources, &cancel).await;
        if !self.is_current(generation) {
            return;
        }
        let transferred = Some((meter.bytes(), meter.requests()));
        match result {
            Ok(OpenedAs::One(cp, sources)) => {
                let address = Address { urls: vec![source], sample: None };
                self.opened(generation, cp, sources, label, transferred, address).await;
            }
            Ok(OpenedAs::Variants(all, files, other)) => {
                browser::set_query("url", std::slice::from_ref(&source));
                browser::set_query("sample", &[]);
                self.transferred.set(transferred);
                self.show_variants(Variants { all, other, unreadable, label, source: Some(source) }, files);
            }
            Err(e) => self.failed("the repository", e),
        }
    }

    /// Open the checkpoint to compare with (B, replacing the open of B under way): local files
    /// (no network), or URLs (only header ranges fetched). Until it is shown, the B before stays;
    /// once shown, `?vs=` names its URLs (none for local files).
    pub fn open_vs(self, inputs: Vec<Input>, urls: Vec<String>, label: String) {
        self.vs_cancel.with_value(Cancel::cancel);
        let cancel = Cancel::new();
        self.vs_cancel.set_value(cancel.clone());
        self.error.set(None);
        self.vs_loading.set(Some(OpenProgress::default()));
        spawn_local(async move {
            let progress = |p| {
                if !cancel.is_cancelled() {
                    self.vs_loading.set(Some(p))
                }
            };
            let result = if urls.is_empty() {
                let mut inputs = inputs;
                crate::engine::sort::sort_by(&mut inputs, |a, b| a.path.cmp(&b.path));
                let files: Vec<(String, Source)> =
                    inputs.iter().map(|i| (i.path.clone(), BlobSource::new(i.blob.clone()).into())).collect();
                open_sources(&files, &cancel, progress).await
            } else {
                open_urls(&urls, &Meter::default(), &cancel, progress).await
            };
            if cancel.is_cancelled() {
                return;
            }
            self.vs_loading.set(None);
            match result {
                Ok((cp, sources)) => {
                    browser::set_query("vs", &urls);
                    self.vs_sources.set_value(sources);
                    self.vs_label.set(label);
                    self.vs.set(Some(Arc::new(cp)));
                }
                Err(e) => self.error.set(Some(format!("could not open the checkpoint to compare with: {e}"))),
            }
        });
    }

    /// Stop the open of B under way (its requests are aborted); the B shown before stays.
    pub fn cancel_vs(self) {
        self.vs_cancel.with_value(Cancel::cancel);
        self.vs_loading.set(None);
    }

    /// Open one of the built-in samples.
    pub fn open_sample(self, sample: Sample) {
        let (cancel, generation) = self.start_open();
        self.variants.set(None);
        spawn_local(async move {
            let mut inputs = Vec::new();
            for &path in sample.files {
                match browser::fetch_blob(&format!("samples/{path}")).await {
                    Ok(blob) => inputs.push(Input { path: path.to_owned(), blob }),
                    Err(e) => {
                        if self.is_current(generation) {
                            self.error.set(Some(format!("could not load the sample {path}: {e}")));
                        }
                        return;
                    }
                }
            }
            if self.is_current(generation) {
                // The default sample is what the bare page shows: it needs no `?sample=`.
                let named = (sample != SAMPLES[0]).then(|| sample.files[0].to_owned());
                let address = Address { urls: Vec::new(), sample: named };
                self.open_now(inputs, format!("sample: {}", sample.label), address, cancel, generation);
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
