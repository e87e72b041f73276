//! Assembling the files given into one [`Checkpoint`]: a single file, a safetensors set with or
//! without its index, or a GGUF split set.

use std::collections::BTreeMap;

use crate::hash::{HashMap, HashSet};

use super::config::{self, ConfigFile, ConfigRead, MAX_CONFIG_BYTES};
use super::findings::{Finding, RuleCap};
use super::gguf::{self, Value};
use super::kind;
use super::model::{Checkpoint, Dtype, Extent, FileInfo, Format, Lost, MetaValue, Tensor};
use super::open::Parsed;
use super::safetensors;

/// Stable codes of the rules a set of files can break.
pub mod rules {
    use crate::findings::Rule;

    pub const NO_CHECKPOINT: Rule = Rule::error("set.no_checkpoint");
    pub const MIXED_FORMATS: Rule = Rule::error("set.mixed_formats");
    pub const IGNORED_FILE: Rule = Rule::info("set.ignored_file");
    pub const PICKLE_NOT_LOADED: Rule = Rule::info("set.pickle_not_loaded");
    pub const DUPLICATE_TENSOR: Rule = Rule::error("set.duplicate_tensor");
    pub const MISSING_SHARD: Rule = Rule::error("set.missing_shard");
    pub const WRONG_SHARD: Rule = Rule::error("set.wrong_shard");
    pub const MISSING_TENSOR: Rule = Rule::error("set.missing_tensor");
    pub const UNINDEXED_TENSOR: Rule = Rule::error("set.unindexed_tensor");
    pub const TOTAL_SIZE_MISMATCH: Rule = Rule::warning("set.total_size_mismatch");
    pub const EXTRA_INDEX: Rule = Rule::warning("set.extra_index");
    pub const SPLIT_MISMATCH: Rule = Rule::error("set.split_mismatch");
    pub const NOT_A_SPLIT_SET: Rule = Rule::warning("set.not_a_split_set");
    pub const PARAMETER_COUNT_MISMATCH: Rule = Rule::warning("set.parameter_count_mismatch");
}

use super::text::base_name;

/// Configs in a folder below a folder of the weights given (`folders`), and in none of those
/// folders themselves (a named chat template counts from the folder above its own), are not the
/// model's: listed as ignored, not read. A folder picked whole, or a Hub repository, brings its
/// subfolders' files, and a sentence-transformers model keeps its pooling layer's `config.json`
/// in `1_Pooling/`: read as the model's, it hid the real one (transformers reads the weights' own
/// folder). A config beside the weights, or anywhere else (one given on purpose), stays. The
/// same holds for configs that could not be read (`unread`: each path with the finding saying
/// why): only those that stay are findings.
fn ignore_configs_below(
    configs: &mut Vec<ConfigFile>,
    unread: Vec<(String, Finding)>,
    folders: &[&str],
    findings: &mut Vec<Finding>,
) {
    let folders: Vec<String> = folders.iter().map(|f| plain_folder(f)).collect();
    let below = |path: &str| {
        let at = plain_folder(config::companion_folder(path));
        !folders.is_empty() && !folders.contains(&at) && folders.iter().any(|f| at.starts_with(f.as_str()))
    };
    let ignored = |path: &str| {
        Finding::new(rules::IGNORED_FILE, format!("{path} is in a folder below the weights' and was ignored"))
    };
    configs.retain(|c| {
        let set_aside = below(&c.path);
        if set_aside {
            findings.push(ignored(&c.path));
        }
        !set_aside
    });
    for (path, why) in unread {
        findings.push(if below(&path) { ignored(&path) } else { why });
    }
}

/// `folder` (as [`super::text::folder`] gives it) compared as written but for its separators
/// (`\` as `/`) and `.` steps (`./m/`, `m/./` are `m/`).
fn plain_folder(folder: &str) -> String {
    let mut out = String::with_capacity(folder.len());
    let folder = folder.replace('\\', "/");
    let absolute = folder.starts_with('/');
    for part in folder.split('/').filter(|p| !p.is_empty() && *p != ".") {
        out.push_str(part);
        out.push('/');
    }
    if absolute {
        out.insert(0, '/');
    }
    out
}

/// One model from the files given, in any order, in pieces: each of the checkpoint's files
/// records its position in `given` ([`FileInfo::given`]), so byte sources stay aligned by
/// index. [`Assembling::step`] turns a safetensors set's header entries into tensors a piece at
/// a time (at 500k tensors the whole takes about 80 ms in the browser's size-optimised build),
/// and [`Assembling::finish`] checks the set as a whole; the engine's inspections run over what
/// it gives.
pub struct Assembling {
    findings: Vec<Finding>,
    configs: Vec<ConfigFile>,
    /// An index's `metadata.total_parameters`, and the index's path.
    claimed: Option<(String, u64)>,
    set: Set,
}

/// The files a checkpoint is made of.
enum Set {
    /// Pickle shards and the indexes naming them.
    Pickle(Vec<(FileInfo, super::pickle::PickleRead)>, Vec<(FileInfo, safetensors::Index)>),
    Gguf(Vec<(FileInfo, gguf::Header)>),
    Safetensors(Box<SafetensorsSet>),
    Nothing,
}

impl Assembling {
    pub fn new(given: Vec<(FileInfo, Parsed)>) -> Self {
        let mut findings = Vec::new();
        let mut st = Vec::new();
        let mut gg = Vec::new();
        let mut indexes = Vec::new();
        let mut configs = Vec::new();
        let mut unread = Vec::new();
        let mut pickles = Vec::new();
        let mut pickle_indexes = Vec::new();
        for (i, (mut info, parsed)) in given.into_iter().enumerate() {
            info.given = i;
            match parsed {
                Parsed::Safetensors(h) => st.push((info, h)),
                Parsed::Gguf(h) => gg.push((info, h)),
                Parsed::Index(i) if indexes_pickles(&info.path) => pickle_indexes.push((info, i)),
                Parsed::Index(i) => indexes.push((info, i)),
                Parsed::Config(ConfigRead::Json(json)) => configs.push(ConfigFile { path: info.path, json }),
                Parsed::Config(ConfigRead::Text(text)) => {
                    configs.push(ConfigFile { path: info.path, json: serde_json::Value::String(text) })
                }
                Parsed::Config(ConfigRead::TooLarge(n)) => {
                    let why = format!(
                        "{} is {n} bytes, over the {MAX_CONFIG_BYTES}-byte limit for a config, and was not read",
                        info.path
                    );
                    unread.push((info.path, Finding::new(config::rules::TOO_LARGE, why)))
                }
                Parsed::Config(ConfigRead::Page) => {
                    let why = format!(
                        "{} is an HTML page, not the file (saved from a web page's address?), and was not used",
                        info.path
                    );
                    unread.push((info.path, Finding::new(config::rules::NOT_JSON, why)))
                }
                Parsed::Config(ConfigRead::NotJson(why)) => {
                    let why = format!("{} was not used: {why}", info.path);
                    unread.push((info.path, Finding::new(config::rules::NOT_JSON, why)))
                }
                Parsed::Pickle(read) => pickles.push((info, read)),
                Parsed::Other => findings.push(Finding::new(
                    rules::IGNORED_FILE,
                    format!("{} is not a checkpoint file and was ignored", info.path),
                )),
            }
        }
        let weights = st.iter().map(|(i, _)| i).chain(gg.iter().map(|(i, _)| i)).chain(pickles.iter().map(|(i, _)| i));
        let weights = weights.chain(indexes.iter().chain(&pickle_indexes).map(|(i, _)| i));
        let folders: Vec<&str> = weights.map(|i| super::text::folder(&i.path)).collect();
        ignore_configs_below(&mut configs, unread, &folders, &mut findings);
        let use_gguf = gg.len() > st.len() || (gg.len() == st.len() && !gg.is_empty() && indexes.is_empty());
        if !st.is_empty() && !gg.is_empty() {
            let (kept, dropped) = if use_gguf { ("GGUF", st.len()) } else { ("safetensors", gg.len()) };
            findings.push(Finding::new(
                rules::MIXED_FORMATS,
                format!("files of both formats were given; showing the {kept} files and ignoring {dropped} others"),
            ));
        }
        // The indexes of the set shown: a pickle set's own, or the safetensors ones.
        let use_pickles = st.is_empty()
            && gg.is_empty()
            && (!pickles.is_empty() || (!pickle_indexes.is_empty() && indexes.is_empty()));
        let (used, unused) = if use_pickles { (pickle_indexes, indexes) } else { (indexes, pickle_indexes) };
        let indexes = used;
        for (info, _) in &unused {
            findings.push(Finding::new(
                rules::IGNORED_FILE,
                format!("{} is an index of other shards than those shown and was ignored", info.path),
            ));
        }
        let claimed = if use_gguf {
            None
        } else {
            indexes.iter().find_map(|(info, ix)| Some((info.path.clone(), ix.total_parameters?)))
        };
        if !pickles.is_empty() && (!st.is_empty() || !gg.is_empty()) {
            for (info, _) in &pickles {
                findings.push(Finding::new(
                    rules::PICKLE_NOT_LOADED,
                    format!(
                        "{} is a pickle checkpoint; the safetensors or GGUF files given with it are shown",
                        info.path
                    ),
                ));
            }
            pickles.clear();
        }
        let set = if use_pickles {
            Set::Pickle(pickles, indexes)
        } else if use_gguf {
            for (info, _) in &indexes {
                findings.push(Finding::new(
                    rules::IGNORED_FILE,
                    format!("{} is a safetensors index and was ignored", info.path),
                ));
            }
            Set::Gguf(gg)
        } else if !st.is_empty() || !indexes.is_empty() {
            Set::Safetensors(Box::new(SafetensorsSet::new(st, indexes)))
        } else {
            findings.push(Finding::new(
                rules::NO_CHECKPOINT,
                "no safetensors, GGUF or pickle checkpoint among the files given",
            ));
            Set::Nothing
        };
        crate::sort::sort_by(&mut configs, |a, b| a.path.cmp(&b.path));
        Assembling { findings, configs, claimed, set }
    }

    /// Take in up to `n` more tensors of a safetensors set; true once every one is. GGUF and
    /// pickle sets are made whole in [`Assembling::finish`].
    pub fn step(&mut self, n: usize) -> bool {
        match &mut self.set {
            Set::Safetensors(s) => s.step(n),
            Set::Pickle(..) | Set::Gguf(_) | Set::Nothing => true,
        }
    }

    /// The checkpoint; tensors not yet taken in are taken in first.
    pub fn finish(self) -> Checkpoint {
        let Assembling { mut findings, configs, claimed, set } = self;
        let mut cp = match set {
            Set::Pickle(pickles, indexes) => {
                let mut cp = super::pickle_set::pickle_set(pickles);
                check_set(indexes, &cp.tensors, &cp.files, &mut cp.findings);
                cp
            }
            Set::Gguf(gg) => gguf_set(gg),
            Set::Safetensors(s) => s.finish(),
            Set::Nothing => Checkpoint::empty(Format::Safetensors),
        };
        findings.append(&mut cp.findings);
        cp.findings = findings;
        cp.configs = configs;
        if let Some((path, claimed)) = claimed {
            let complete = !cp.findings.iter().any(|f| f.breaks(rules::MISSING_SHARD));
            let counted = super::summary::summarize(&cp).all.params;
            // Within 1%: tied or buffer tensors may be counted once more or less by the writer.
            if complete && claimed.abs_diff(counted) as f64 > 0.01 * counted.max(claimed) as f64 {
                cp.findings.push(Finding::new(
                    rules::PARAMETER_COUNT_MISMATCH,
                    format!(
                        "{path} claims metadata.total_parameters {claimed} but the tensors hold {counted} parameters"
                    ),
                ));
            }
        }
        cp
    }
}

/// A set's metadata: each key once, from the first file holding it, with that file's index.
struct Metadata {
    metadata: Vec<(String, MetaValue)>,
    meta_file: Vec<usize>,
    /// Keys seen so far, kept only when later files may repeat them.
    keys: HashSet<String>,
    files: usize,
}

impl Metadata {
    fn new(files: usize) -> Self {
        Metadata { metadata: Vec::new(), meta_file: Vec::new(), keys: HashSet::default(), files }
    }

    /// The entries of file `file`, after those of the files before it.
    fn add(&mut self, file: usize, entries: impl ExactSizeIterator<Item = (String, MetaValue)>) {
        self.metadata.reserve(entries.len());
        self.meta_file.reserve(entries.len());
        for (k, v) in entries {
            // A file's own keys are distinct already: the set is only for later files.
            let keep = if file == 0 {
                if self.files > 1 {
                    self.keys.insert(k.clone());
                }
                true
            } else {
                self.keys.insert(k.clone())
            };
            if keep {
                self.meta_file.push(file);
                self.metadata.push((k, v));
            }
        }
    }
}

/// A safetensors set (shards and their index) being assembled, some entries at a time.
struct SafetensorsSet {
    /// Files not yet begun, in order of their names.
    files: std::vec::IntoIter<(FileInfo, safetensors::Header)>,
    /// The file being taken in: its index, data offset and length, and its entries left.
    current: Option<(usize, u64, u64, std::vec::IntoIter<safetensors::TensorEntry>)>,
    indexes: Vec<(FileInfo, safetensors::Index)>,
    meta: Metadata,
    tensors: Vec<Tensor>,
    infos: Vec<FileInfo>,
    findings: Vec<Finding>,
}

impl SafetensorsSet {
    fn new(mut files: Vec<(FileInfo, safetensors::Header)>, indexes: Vec<(FileInfo, safetensors::Index)>) -> Self {
        crate::sort::sort_by(&mut files, |a, b| base_name(&a.0.path).cmp(base_name(&b.0.path)));
        SafetensorsSet {
            meta: Metadata::new(files.len()),
            files: files.into_iter(),
            current: None,
            indexes,
            tensors: Vec::new(),
            infos: Vec::new(),
            findings: Vec::new(),
        }
    }

    fn step(&mut self, n: usize) -> bool {
        let mut left = n;
        loop {
            if let Some((file, data_start, file_len, entries)) = &mut self.current {
                for t in entries.by_ref().take(left) {
                    self.tensors.push(tensor(t, *file, *data_start, *file_len));
                    left -= 1;
                }
                if entries.len() > 0 {
                    return false;
                }
                self.current = None;
            }
            let Some((info, h)) = self.files.next() else { return true };
            let i = self.infos.len();
            self.meta.add(i, h.metadata.into_iter().map(|(k, v)| (k, MetaValue::Text(v))));
            self.tensors.reserve(h.tensors.len());
            self.findings.extend(h.findings.into_iter().map(|f| f.in_file(i)));
            self.current = Some((i, h.header_len.saturating_add(8), info.size, h.tensors.into_iter()));
            self.infos.push(info);
        }
    }

    fn finish(mut self) -> Checkpoint {
        self.step(usize::MAX);
        let SafetensorsSet { indexes, meta, tensors, infos, mut findings, .. } = self;
        check_set(indexes, &tensors, &infos, &mut findings);
        let big_endian = vec![false; infos.len()];
        let Metadata { metadata, meta_file, .. } = meta;
        Checkpoint {
            format: Format::Safetensors,
            files: infos,
            metadata,
            meta_file,
            big_endian,
            tensors: tensors.into(),
            findings,
            ..Checkpoint::empty(Format::Safetensors)
        }
    }
}

/// Header entry `t` of file `file`, whose data section starts at `data_start`, in a file of
/// `file_len` bytes.
fn tensor(t: safetensors::TensorEntry, file: usize, data_start: u64, file_len: u64) -> Tensor {
    let dtype = match t.dtype {
        Ok(d) => Dtype::Safetensors(d),
        Err(s) => Dtype::Unknown(s),
    };
    let offset = data_start.checked_add(t.begin);
    let nbytes = t.end.saturating_sub(t.begin);
    let data = match offset {
        Some(o) if t.end >= t.begin => Extent::check(&dtype, &t.shape, o, nbytes, file_len),
        Some(_) => Err(Lost::Inverted),
        None => Err(Lost::PastEnd { end: None, file_len }),
    };
    Tensor { name: t.name, dtype, shape: t.shape, file, offset, nbytes, data, strides: None }
}

/// A set of shards as a whole: names repeated across files, then the first index against the
/// tensors (any other ignored with a warning) or, without one, the shards its file names count.
fn check_set(
    mut indexes: Vec<(FileInfo, safetensors::Index)>,
    tensors: &[Tensor],
    infos: &[FileInfo],
    findings: &mut Vec<Finding>,
) {
    // Built whenever there is an index, or more than one file.
    let names = (infos.len() > 1 || !indexes.is_empty()).then(|| Names::of(tensors));
    if let Some(names) = names.as_ref().filter(|_| infos.len() > 1) {
        duplicate_names(tensors, infos, names, findings);
    }
    if indexes.len() > 1 {
        for (info, _) in indexes.drain(1..) {
            findings.push(Finding::new(rules::EXTRA_INDEX, format!("{} is a second index and was ignored", info.path)));
        }
    }
    match (indexes.pop(), &names) {
        (Some((info, index)), Some(names)) => check_index(&info, index, tensors, infos, names, findings),
        _ => check_shard_names(infos, findings),
    }
}

/// The tensors' names: the first tensor of each name, and each tensor's first tensor of the same
/// name (itself when the name is new). One map serves the duplicate and the index checks.
struct Names<'a> {
    first: HashMap<&'a str, usize>,
    first_of: Vec<usize>,
}

impl<'a> Names<'a> {
    fn of(tensors: &'a [Tensor]) -> Self {
        let mut first = HashMap::with_capacity_and_hasher(tensors.len(), Default::default());
        let first_of = tensors.iter().enumerate().map(|(i, t)| *first.entry(t.name.as_str()).or_insert(i)).collect();
        Names { first, first_of }
    }
}

/// A tensor name used in two files (each file's own duplicates are its header's findings).
fn duplicate_names(tensors: &[Tensor], files: &[FileInfo], names: &Names, findings: &mut Vec<Finding>) {
    for (t, &j) in tensors.iter().zip(&names.first_of) {
        let f = tensors[j].file;
        if f != t.file {
            findings.push(
                Finding::new(
                    rules::DUPLICATE_TENSOR,
                    format!("tensor is in both {} and {}", files[f].path, files[t.file].path),
                )
                .on_tensor(&t.name),
            );
        }
    }
}

fn check_index(
    index_file: &FileInfo,
    mut index: safetensors::Index,
    tensors: &[Tensor],
    files: &[FileInfo],
    names: &Names,
    out: &mut Vec<Finding>,
) {
    let ipath = &index_file.path;
    out.append(&mut index.findings);
    // An entry can break a rule once per tensor: the index's findings are capped per rule.
    let mut findings = Vec::new();
    let mut cap = RuleCap::default();
    let file_named: HashMap<&str, usize> = files.iter().enumerate().map(|(i, f)| (base_name(&f.path), i)).collect();
    // The file of each shard the index names, looked up once per shard, not per entry.
    let shard_file: Vec<Option<usize>> = index.shards.iter().map(|s| file_named.get(base_name(s)).copied()).collect();
    let mut missing_shards = BTreeMap::new();
    // By each name's first tensor; the later copies of a name (each an error of its own) are
    // looked up by file, so an entry naming a shard that holds a copy is not also wrong.
    let mut indexed = vec![false; tensors.len()];
    let copies: HashSet<(&str, usize)> = tensors
        .iter()
        .zip(&names.first_of)
        .enumerate()
        .filter(|&(i, (_, &j))| i != j)
        .map(|(_, (t, _))| (t.name.as_str(), t.file))
        .collect();
    for (i, (name, shard_no)) in index.weight_map.iter().enumerate() {
        let shard = index.shard_of(i);
        let found = names.first.get(name.as_str()).copied();
        if let Some(j) = found {
            indexed[j] = true;
        }
        let Some(want) = shard_file.get(*shard_no as usize).copied().flatten() else {
            *missing_shards.entry(shard).or_insert(0u64) += 1;
            continue;
        };
        match found.map(|j| tensors[j].file) {
            Some(got) if got == want || copies.contains(&(name.as_str(), want)) => {}
            Some(got) => findings.push(
                Finding::new(
                    rules::WRONG_SHARD,
                    format!("{ipath} places the tensor in {shard} but it is in {}", files[got].path),
                )
                .on_tensor(name),
            ),
            None => findings.push(
                Finding::new(
                    rules::MISSING_TENSOR,
                    format!("{ipath} places the tensor in {shard}, which does not hold it"),
                )
                .on_tensor(name),
            ),
        }
        cap.trim(&mut findings);
    }
    for (shard, n) in &missing_shards {
        findings.push(Finding::new(
            rules::MISSING_SHARD,
            format!("shard {shard} (holding {n} tensors according to {ipath}) was not given"),
        ));
    }
    for (t, &j) in tensors.iter().zip(&names.first_of) {
        if !indexed[j] {
            findings.push(
                Finding::new(
                    rules::UNINDEXED_TENSOR,
                    format!("tensor in {} is not listed in {ipath}", files[t.file].path),
                )
                .in_file(t.file)
                .on_tensor(&t.name),
            );
            cap.trim(&mut findings);
        }
    }
    if let (Some(total), true) = (index.total_size, missing_shards.is_empty()) {
        let sum: u64 = tensors.iter().map(|t| t.nbytes).fold(0, u64::saturating_add);
        if sum != total {
            findings.push(Finding::new(
                rules::TOTAL_SIZE_MISMATCH,
                format!("{ipath} gives metadata.total_size {total} but the tensors hold {sum} bytes"),
            ));
        }
    }
    cap.finish(&mut findings);
    out.append(&mut findings);
}

/// Whether an index (by its file name) maps tensors to pickle shards (`pytorch_model.bin.index.json`)
/// rather than to safetensors shards.
fn indexes_pickles(path: &str) -> bool {
    let lower = base_name(path).to_ascii_lowercase();
    [".bin.index.json", ".pt.index.json", ".pth.index.json"].iter().any(|s| lower.ends_with(s))
}

/// `(k, n)` from a name with `-0000k-of-0000n` before its extension.
pub fn shard_number(name: &str) -> Option<(u32, u32)> {
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let (rest, total) = stem.rsplit_once("-of-")?;
    let (_, k) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() >= 3 && s.bytes().all(|b| b.is_ascii_digit());
    let total = total.split('-').next()?;
    if !digits(k) || !digits(total) {
        return None;
    }
    Some((k.parse().ok()?, total.parse().ok()?))
}

/// Without an index, shards named `-0000k-of-0000n` must all be there.
fn check_shard_names(files: &[FileInfo], findings: &mut Vec<Finding>) {
    let mut sets: BTreeMap<(String, u32), HashSet<u32>> = BTreeMap::new();
    for f in files {
        let name = base_name(&f.path);
        if let Some((k, n)) = shard_number(name) {
            let prefix = name[..name.rfind("-of-").unwrap_or(0)].rsplit_once('-').map_or("", |p| p.0);
            sets.entry((prefix.to_owned(), n)).or_default().insert(k);
        }
    }
    for ((prefix, n), have) in sets {
        let present: HashSet<u64> = have.iter().map(|&k| u64::from(k).wrapping_sub(1)).collect();
        if let Some(list) = missing_list(u64::from(n), &present) {
            findings.push(Finding::new(rules::MISSING_SHARD, format!("{prefix}: shards {list} of {n} were not given")));
        }
    }
}

/// Shards named in messages before the rest are only counted.
const MISSING_LISTED: usize = 8;

/// The 1-based numbers of the shards `0..count` missing from `present` (0-based numbers), as
/// `00002, 00005 and 3 more`; `None` when none is missing. Work is bounded by the shards
/// present, not by `count`, which a damaged file may make huge.
fn missing_list(count: u64, present: &HashSet<u64>) -> Option<String> {
    let have = present.iter().filter(|&&n| n < count).count() as u64;
    let missing = count - have;
    if missing == 0 {
        return None;
    }
    let listed: Vec<String> =
        (0..count).filter(|n| !present.contains(n)).take(MISSING_LISTED).map(|n| format!("{:05}", n + 1)).collect();
    let more = missing - listed.len() as u64;
    Some(if more > 0 { format!("{} and {more} more", listed.join(", ")) } else { listed.join(", ") })
}

fn split_u64(h: &gguf::Header, key: &str) -> Option<u64> {
    h.get(key).and_then(Value::as_u64)
}

fn gguf_set(mut files: Vec<(FileInfo, gguf::Header)>) -> Checkpoint {
    // Companions (projectors, adapters) go last, so the model's `general.*` keys are the ones
    // kept, and they are not taken for missing split keys: a model opened with its mmproj or
    // its LoRA is checked for fit instead.
    let is_companion = |h: &gguf::Header| {
        let meta = h.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let kind = kind::classify(meta, h.tensors.iter().map(|t| t.name.as_str()));
        matches!(kind, kind::Kind::Projector | kind::Kind::Adapter)
    };
    crate::sort::sort_by_cached_key(&mut files, |(info, h)| {
        (is_companion(h), split_u64(h, "split.no").unwrap_or(u64::MAX), base_name(&info.path).to_owned())
    });
    let models = match files.iter().take_while(|(_, h)| !is_companion(h)).count() {
        0 => files.len(),
        n => n,
    };
    let mut findings = Vec::new();
    check_split(&files[..models], &mut findings);
    let mut meta = Metadata::new(files.len());
    let mut big_endian = Vec::new();
    let mut tensors = Vec::new();
    let mut infos = Vec::new();
    for (i, (info, h)) in files.into_iter().enumerate() {
        let data_start = h.data_start;
        let big = h.big_endian;
        big_endian.push(big);
        tensors.reserve(h.tensors.len());
        for t in h.tensors {
            let dtype = Dtype::Ggml(t.ggml_type);
            let offset = data_start.and_then(|d| d.checked_add(t.rel_offset));
            let data = match (data_start, offset, t.nbytes) {
                (None, _, _) => Err(Lost::NoDataSection),
                (_, _, None) => Err(Lost::NoSize),
                (_, None, Some(_)) => Err(Lost::PastEnd { end: None, file_len: info.size }),
                (_, _, Some(n)) if t.span.is_some_and(|s| s < n) => {
                    Err(Lost::SizeMismatch { declared: t.span.unwrap_or(0), needed: n })
                }
                (_, Some(o), Some(n)) => Extent::check(&dtype, &t.ne, o, n, info.size),
            };
            // The decoders read little-endian only: a big-endian file's values would come out wrong.
            let data = data.and_then(|e| if big { Err(Lost::BigEndian) } else { Ok(e) });
            tensors.push(Tensor {
                name: t.name,
                dtype,
                shape: t.ne,
                file: i,
                offset,
                nbytes: t.nbytes.unwrap_or(0),
                data,
                strides: None,
            });
        }
        meta.add(i, h.metadata.into_iter().map(|(k, v)| (k, MetaValue::Gguf(v))));
        findings.extend(h.findings.into_iter().map(|f| f.in_file(i)));
        infos.push(info);
    }
    if infos.len() > 1 {
        duplicate_names(&tensors, &infos, &Names::of(&tensors), &mut findings);
    }
    let Metadata { metadata, meta_file, .. } = meta;
    Checkpoint {
        format: Format::Gguf,
        files: infos,
        metadata,
        meta_file,
        big_endian,
        tensors: tensors.into(),
        findings,
        ..Checkpoint::empty(Format::Gguf)
    }
}

/// `split.no`, `split.count` and `split.tensors.count` must describe one complete set.
fn check_split(files: &[(FileInfo, gguf::Header)], findings: &mut Vec<Finding>) {
    let split: Vec<_> = files
        .iter()
        .map(|(_, h)| (split_u64(h, "split.no"), split_u64(h, "split.count"), split_u64(h, "split.tensors.count")))
        .collect();
    let mismatch = |msg: String| Finding::new(rules::SPLIT_MISMATCH, msg);
    if split.iter().all(|s| s.1.is_none()) {
        if files.len() > 1 {
            findings.push(Finding::new(
                rules::NOT_A_SPLIT_SET,
                format!("{} GGUF files were given together but carry no split.* keys", files.len()),
            ));
        }
        return;
    }
    let counts: HashSet<Option<u64>> = split.iter().map(|s| s.1).collect();
    if counts.len() > 1 {
        let mut counts: Vec<String> = counts.iter().map(|c| c.map_or("none".into(), |c| c.to_string())).collect();
        crate::sort::sort(&mut counts);
        findings.push(mismatch(format!("files disagree on split.count: {}", counts.join(", "))));
        return;
    }
    let count = split[0].1.unwrap_or(0);
    let mut seen = HashSet::default();
    for ((info, _), (no, _, _)) in files.iter().zip(&split) {
        match no {
            Some(n) if *n < count => {
                if !seen.insert(*n) {
                    findings.push(mismatch(format!("{} repeats split.no {n}", info.path)));
                }
            }
            _ => {
                let no = no.map_or("none".into(), |n| n.to_string());
                findings.push(mismatch(format!("{} has split.no {no}, outside 0..{count}", info.path)));
            }
        }
    }
    if let Some(list) = missing_list(count, &seen) {
        findings.push(Finding::new(rules::MISSING_SHARD, format!("split set of {count} files lacks shards {list}")));
        return;
    }
    let actual: u64 = files.iter().map(|(_, h)| h.tensors.len() as u64).sum();
    for ((info, _), (_, _, declared)) in files.iter().zip(&split) {
        if let Some(d) = declared.filter(|&d| d != actual) {
            findings.push(mismatch(format!(
                "{} gives split.tensors.count {d} but the set holds {actual} tensors",
                info.path
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which of `configs` stay beside weights in `weights`' folders.
    fn kept(weights: &[&str], configs: &[&str]) -> Vec<String> {
        let mut configs: Vec<ConfigFile> =
            configs.iter().map(|p| ConfigFile { path: (*p).into(), json: serde_json::Value::Null }).collect();
        let folders: Vec<&str> = weights.iter().map(|w| super::super::text::folder(w)).collect();
        let mut findings = Vec::new();
        ignore_configs_below(&mut configs, Vec::new(), &folders, &mut findings);
        assert!(findings.iter().all(|f| f.message.contains("below the weights'")), "{findings:?}");
        configs.into_iter().map(|c| c.path).collect()
    }

    #[test]
    fn only_configs_below_the_weights_folder_are_set_aside() {
        // A folder picked whole: the pooling layer's config is below the weights'.
        let m =
            ["m/config.json", "m/1_Pooling/config.json", "m/additional_chat_templates/x.jinja", "other/config.json"];
        assert_eq!(
            kept(&["m/model.safetensors"], &m),
            ["m/config.json", "m/additional_chat_templates/x.jinja", "other/config.json"]
        );
        // A Hub repository's paths: the weights at its root.
        assert_eq!(kept(&["model.safetensors"], &["1_Pooling/config.json", "config.json"]), ["config.json"]);
        // The same folder however written: `.` steps, `\` separators; an absolute path's folder
        // and a bare name are not below one another.
        assert_eq!(kept(&["./model.safetensors"], &["config.json"]), ["config.json"]);
        assert_eq!(
            kept(&["m\\model.safetensors"], &["./m/config.json", "m\\1_Pooling\\config.json"]),
            ["./m/config.json"]
        );
        assert_eq!(kept(&["/abs/m/model.safetensors"], &["config.json", "/abs/m/a/config.json"]), ["config.json"]);
        // No weights: every config stays.
        assert_eq!(kept(&[], &["1_Pooling/config.json", "config.json"]), ["1_Pooling/config.json", "config.json"]);
    }

    #[test]
    fn a_config_that_could_not_be_read_below_the_weights_is_ignored_not_a_finding() {
        let unread = ["m/1_Pooling/config.json", "m/config.json"]
            .map(|p| (p.to_owned(), Finding::new(config::rules::NOT_JSON, format!("{p} was not used"))));
        let mut findings = Vec::new();
        ignore_configs_below(&mut Vec::new(), unread.to_vec(), &["m/"], &mut findings);
        let said: Vec<(&str, &str)> = findings.iter().map(|f| (f.code, f.message.as_str())).collect();
        assert_eq!(
            said,
            [
                ("set.ignored_file", "m/1_Pooling/config.json is in a folder below the weights' and was ignored"),
                ("config.not_json", "m/config.json was not used"),
            ]
        );
    }
}
