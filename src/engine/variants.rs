//! A folder's or a repository's files as the checkpoints they hold: GGUF files by base name and
//! quant (split parts together), safetensors and pickle sets by their index or their
//! `-0000k-of-0000n` shard names, each with the config files beside it; each assembled and
//! inspected alone. Models are the variants to choose from; projectors, adapters, importance
//! matrices and vocab-only files are companions; every other file is listed as it is.

use crate::inspections::assemble;
use crate::kind::{classify, kind, Kind};
use crate::model::{Checkpoint, FileInfo, Format};
use crate::naming::{file_type_name, parse_name};
use crate::open::Parsed;
use crate::shards::shard_number;
use crate::text::{base_name, folder};

/// One checkpoint among the files: its name and the indices of its files among those given.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub name: String,
    pub files: Vec<usize>,
}

/// The files given, as checkpoints and the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grouping {
    pub groups: Vec<Group>,
    /// Files that belong to no checkpoint (tokenizers, ONNX exports, READMEs), by index.
    pub other: Vec<usize>,
}

/// A checkpoint of the files, assembled and inspected.
#[derive(Debug)]
pub struct Variant {
    pub name: String,
    pub kind: Kind,
    pub cp: Checkpoint,
    /// Every file of the group (its index and config files too), as given.
    pub files: Vec<FileInfo>,
    /// A model that is a draft for speculative decoding beside larger ones ([`mark_drafts`]).
    pub draft: bool,
}

impl Variant {
    /// The bytes of its files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().fold(0, |n, f| n.saturating_add(f.size))
    }

    /// Whether it is one of the variants to choose from (a model, not a draft); the rest are
    /// companions.
    pub fn is_choice(&self) -> bool {
        self.kind == Kind::Model && !self.draft
    }

    /// What it is, as the repository report names it: `draft`, else its kind.
    pub fn role(&self) -> &'static str {
        if self.draft {
            "draft"
        } else {
            self.kind.name()
        }
    }
}

/// A model is a draft when a model beside it has at least this many times its parameters and
/// its tokenizer fits that model, or when its name says `draft` beside a larger model.
const DRAFT_RATIO: u64 = 8;

/// Mark the GGUF models of `all` that are drafts for the larger ones (see [`DRAFT_RATIO`]): a
/// repository of one model's quants with a small model to draft for them.
fn mark_drafts(all: &mut [Variant]) {
    let params: Vec<u64> = all.iter().map(|v| crate::summary::summarize(&v.cp).all.params).collect();
    let drafts: Vec<bool> = (0..all.len())
        .map(|d| {
            let v = &all[d];
            if v.kind != Kind::Model || v.cp.format != Format::Gguf || params[d] == 0 {
                return false;
            }
            let named = v.name.to_ascii_lowercase().contains("draft")
                || v.files.iter().any(|f| base_name(&f.path).to_ascii_lowercase().contains("draft"));
            (0..all.len()).any(|t| {
                let larger = all[t].kind == Kind::Model && params[t] > params[d];
                larger
                    && (named || (params[t] / params[d] >= DRAFT_RATIO && crate::draft::fit(&all[t].cp, &v.cp).is_ok()))
            })
        })
        .collect();
    for (v, draft) in all.iter_mut().zip(drafts) {
        v.draft = draft;
    }
}

/// Group `given` into checkpoints (see the module's description); a group's files keep the
/// order given.
pub fn group(given: &[(FileInfo, Parsed)]) -> Grouping {
    let mut out = Grouping::default();
    // GGUF: one group per folder and file name less its shard suffix.
    let mut gguf: Vec<(String, Group)> = Vec::new();
    // Safetensors and pickles, per folder: index sets, shard sets, the rest of each format.
    let mut claimed = vec![false; given.len()];
    for (i, (info, parsed)) in given.iter().enumerate() {
        if let Parsed::Gguf(h) = parsed {
            // Parts of a split set: by their `-0000k-of-0000n` names, else by their split keys (a
            // renamed part; only the first part of a gguf-split set holds the other keys).
            let name = base_name(&info.path);
            let split = |k: &str| h.get(k).and_then(|v| v.as_u64());
            let key = match (shard_number(name), split("split.count").filter(|&n| n > 1)) {
                (None, Some(count)) => {
                    format!("{}/split {count} {:?}", folder(&info.path), split("split.tensors.count"))
                }
                _ => format!("{}/{}", folder(&info.path), set_stem(name)),
            };
            let label = parse_name(&info.path).encoding.or_else(|| {
                let id = h.get("general.file_type").and_then(|v| v.as_u64())?;
                file_type_name(id).map(|n| n.trim_start_matches("MOSTLY_").trim_start_matches("ALL_").to_owned())
            });
            match gguf.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => g.files.push(i),
                None => {
                    // A model is named by its quant; a companion (projector, adapter, …) by its file.
                    let meta = h.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                    let model = classify(meta, h.tensors.iter().map(|t| t.name.as_str())) == Kind::Model;
                    let name = label.filter(|_| model).unwrap_or_else(|| set_stem(base_name(&info.path)));
                    gguf.push((key, Group { name, files: vec![i] }));
                }
            }
            claimed[i] = true;
        }
    }
    out.groups.extend(gguf.into_iter().map(|(_, g)| g));
    // Index sets: the index and the shards it names, in its folder.
    for (i, (info, parsed)) in given.iter().enumerate() {
        let Parsed::Index(index) = parsed else { continue };
        let dir = folder(&info.path);
        let mut files = vec![i];
        claimed[i] = true;
        for (j, (f, p)) in given.iter().enumerate() {
            let weights = matches!(p, Parsed::Safetensors(_) | Parsed::Pickle(_));
            if weights && !claimed[j] && folder(&f.path) == dir && index.shards.iter().any(|s| s == base_name(&f.path))
            {
                files.push(j);
                claimed[j] = true;
            }
        }
        files.sort_unstable();
        let name = base_name(&info.path).trim_end_matches(".index.json");
        out.groups.push(Group { name: set_stem(name), files });
    }
    // The rest: shard sets by name; adapters alone; the other files of a format and folder together.
    let mut loose: Vec<(String, Group)> = Vec::new();
    for (i, (info, parsed)) in given.iter().enumerate() {
        let format = match parsed {
            Parsed::Safetensors(_) => "safetensors",
            Parsed::Pickle(_) => "pickle",
            _ => continue,
        };
        if claimed[i] {
            continue;
        }
        let name = base_name(&info.path);
        let key = match parsed {
            _ if shard_number(name).is_some() => format!("{}/{}", folder(&info.path), set_stem(name)),
            Parsed::Safetensors(h) if is_adapter(name, h) => format!("{}/{name}", folder(&info.path)),
            _ => format!("{}/*.{format}", folder(&info.path)),
        };
        match loose.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.files.push(i),
            None => loose.push((key, Group { name: set_stem(name), files: vec![i] })),
        }
        claimed[i] = true;
    }
    out.groups.extend(loose.into_iter().map(|(_, g)| g));
    // Config files join every safetensors or pickle set of their folder (a named chat template,
    // of the folder above its own).
    for (i, (info, parsed)) in given.iter().enumerate() {
        if !matches!(parsed, Parsed::Config(_)) {
            continue;
        }
        let dir = crate::config::companion_folder(&info.path);
        let mut joined = false;
        for g in &mut out.groups {
            let first = &given[g.files[0]];
            if !matches!(first.1, Parsed::Gguf(_)) && folder(&first.0.path) == dir {
                g.files.push(i);
                g.files.sort_unstable();
                joined = true;
            }
        }
        claimed[i] = joined;
    }
    out.other = (0..given.len()).filter(|&i| !claimed[i]).collect();
    disambiguate(&mut out.groups, given);
    out
}

/// Every checkpoint of `given` ([`group`]), assembled and inspected, and the names of the
/// files in none.
pub fn repository(given: Vec<(FileInfo, Parsed)>) -> (Vec<Variant>, Vec<String>) {
    let grouping = group(&given);
    let other = grouping.other.iter().map(|&i| given[i].0.path.clone()).collect();
    (variants(given, &grouping), other)
}

/// Assemble and inspect each group of `given`.
pub fn variants(given: Vec<(FileInfo, Parsed)>, grouping: &Grouping) -> Vec<Variant> {
    let mut given: Vec<Option<(FileInfo, Parsed)>> = given.into_iter().map(Some).collect();
    let mut all = grouping
        .groups
        .iter()
        .map(|g| {
            let files: Vec<(FileInfo, Parsed)> = g.files.iter().filter_map(|&i| given[i].take()).collect();
            let infos = files.iter().map(|(f, _)| f.clone()).collect();
            let cp = assemble(files);
            Variant { name: g.name.clone(), kind: kind(&cp), cp, files: infos, draft: false }
        })
        .collect::<Vec<_>>();
    mark_drafts(&mut all);
    all
}

/// The variants that are separate models, by index: models with tensors, less a pickle set in
/// a folder that also holds a safetensors set (the same weights saved twice, as many
/// repositories ship them: the safetensors are the ones read, as when the folder opens as one).
pub fn separate_models(all: &[Variant]) -> Vec<usize> {
    let dir = |v: &Variant| v.files.first().map_or("", |f| folder(&f.path)).to_owned();
    let safetensors: Vec<String> = all.iter().filter(|v| v.cp.format == Format::Safetensors).map(dir).collect();
    (0..all.len())
        .filter(|&i| {
            let v = &all[i];
            let shadowed = v.cp.format == Format::Pickle && safetensors.contains(&dir(v));
            v.kind == Kind::Model && !v.cp.tensors.is_empty() && !shadowed
        })
        .collect()
}

/// Whether companion `c` fits the model `m`: a projector's output width and family, an
/// adapter's architecture and module widths, a control vector's width and layers, an importance
/// matrix's tensors ([`crate::fit`]), a draft's or a vocab file's tokenizer
/// ([`crate::draft::fit`]); `None` where that is not checked (kohya adapters; importance
/// matrices, control vectors and vocab files beside a model that is not GGUF), else the first
/// difference.
pub fn fits(m: &Variant, c: &Variant) -> Option<Result<(), String>> {
    let gguf = m.cp.format == Format::Gguf;
    if c.draft {
        return Some(crate::draft::fit(&m.cp, &c.cp));
    }
    match c.kind {
        Kind::Projector => {
            let found = crate::projector::fit(&m.cp.joined(&c.cp));
            Some(found.first().map_or(Ok(()), |f| Err(f.message.clone())))
        }
        Kind::Adapter => {
            let a = crate::adapter::adapter(&c.cp)?;
            if a.flavour == crate::adapter::Flavour::ControlVector {
                return gguf.then(|| crate::fit::control_vector(&m.cp, &c.cp));
            }
            crate::adapter::check_fit(&m.cp, &c.cp, &a)
        }
        Kind::Imatrix => gguf.then(|| crate::fit::imatrix(&m.cp, &c.cp)),
        Kind::Vocab => gguf.then(|| crate::draft::fit(&m.cp, &c.cp)),
        Kind::Model => None,
    }
}

/// A file name less its extension and its `-0000k-of-0000n` shard suffix.
fn set_stem(name: &str) -> String {
    let stem = name.strip_suffix(".gguf").unwrap_or(name);
    let stem = match shard_number(name) {
        Some(_) => stem.rsplit_once("-of-").and_then(|(r, _)| r.rsplit_once('-')).map_or(stem, |(r, _)| r),
        None => stem,
    };
    let stem =
        [".safetensors", ".bin", ".pth", ".pt", ".ckpt"].iter().find_map(|e| stem.strip_suffix(e)).unwrap_or(stem);
    stem.to_owned()
}

/// Whether a safetensors file is an adapter by its name or its own contents (PEFT's
/// `adapter_model.safetensors`, LoRA tensor names).
fn is_adapter(name: &str, h: &crate::safetensors::Header) -> bool {
    if name.starts_with("adapter_model") {
        return true;
    }
    let meta = h.metadata.iter().map(|(k, v)| (k.as_str(), Some(v.as_str())));
    classify(meta, h.tensors.iter().map(|t| t.name.as_str())) == Kind::Adapter
}

/// Names that two groups share get their folder, then their first file's name.
fn disambiguate(groups: &mut [Group], given: &[(FileInfo, Parsed)]) {
    for by in [0, 1] {
        let names: Vec<String> = groups.iter().map(|g| g.name.clone()).collect();
        for (i, g) in groups.iter_mut().enumerate() {
            if names.iter().enumerate().any(|(j, n)| j != i && *n == names[i]) {
                let path = &given[g.files[0]].0.path;
                g.name = match by {
                    0 => format!("{}{}", folder(path), names[i]),
                    _ => base_name(path).to_owned(),
                };
            }
        }
    }
}
