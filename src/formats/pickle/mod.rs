//! PyTorch pickle checkpoints opened without running them: the torch.save zip (`data.pkl` and
//! its `data/<key>` storages, read in place), the legacy format (magic number, protocol, system
//! info, the pickle, the storage keys, then the raw storages), the tar archives of torch < 0.4
//! ([`tar`], [`tar_records`]) and plain pickle streams. A
//! [`machine`] builds a tree of what the pickle says; [`torch`] finds the tensors in it;
//! [`safety`] judges every import. Nothing is ever imported or called.

pub mod machine;
pub mod safety;
pub mod tar;
mod tar_load;
pub mod tar_records;
pub mod torch;
pub mod weights_only;
pub mod zip;

use crate::hash::HashMap;

use crate::findings::{Finding, Rule};
use crate::range::ByteRange;
use crate::safetensors::Dtype;
use crate::step::{Decoder, FeedError, Step};
use machine::{Node, Tree};
use safety::{judge, Verdict};
use torch::PickledTensor;
use weights_only::WeightsOnly;

/// Stable codes of the rules a pickle checkpoint can break.
pub mod rules {
    use crate::findings::Rule;

    pub const DANGEROUS_IMPORT: Rule = Rule::error("pickle.dangerous_import");
    pub const UNKNOWN_IMPORT: Rule = Rule::warning("pickle.unknown_import");
    pub const STOPPED: Rule = Rule::error("pickle.stopped");
    pub const BAD_ZIP: Rule = Rule::error("pickle.bad_zip");
    /// The same rule broken in a way the reader works around.
    pub const BAD_ZIP_MINOR: Rule = Rule::warning("pickle.bad_zip");
    pub const NO_DATA_PKL: Rule = Rule::error("pickle.no_data_pkl");
    pub const COMPRESSED: Rule = Rule::error("pickle.compressed");
    /// The same rule broken in a way the reader works around.
    pub const COMPRESSED_MINOR: Rule = Rule::warning("pickle.compressed");
    pub const TOO_LARGE: Rule = Rule::error("pickle.too_large");
    /// The same rule broken in a way the reader works around.
    pub const TOO_LARGE_MINOR: Rule = Rule::warning("pickle.too_large");
    pub const MISSING_STORAGE: Rule = Rule::error("pickle.missing_storage");
    pub const STORAGE_TOO_SMALL: Rule = Rule::error("pickle.storage_too_small");
    pub const NOT_CONTIGUOUS: Rule = Rule::info("pickle.not_contiguous");
    pub const UNKNOWN_STORAGE: Rule = Rule::error("pickle.unknown_storage_type");
    pub const BIG_ENDIAN: Rule = Rule::warning("pickle.big_endian");
    pub const NO_STORAGES: Rule = Rule::info("pickle.no_storages");
    pub const TENSOR_NOT_READ: Rule = Rule::warning("pickle.tensor_not_read");
    pub const DUPLICATE_NAME: Rule = Rule::warning("pickle.duplicate_name");
    pub const UNDECODED_TYPE: Rule = Rule::info("pickle.undecoded_type");
    pub const BAD_TAR: Rule = Rule::error("pickle.bad_tar");
    /// The same rule broken in a way the reader works around.
    pub const BAD_TAR_MINOR: Rule = Rule::warning("pickle.bad_tar");
    pub const TORCHSCRIPT: Rule = Rule::warning("pickle.torchscript");
    pub const WEIGHTS_ONLY_REJECTS: Rule = Rule::warning("pickle.weights_only_rejects");
}

/// Largest pickle read (the `data.pkl` of a 70B model is a few MB).
pub const MAX_PICKLE_BYTES: u64 = 256 << 20;
/// The first read of a file that starts with a pickle; doubled until the pickle's STOP.
const FIRST_PREFIX: u64 = 1 << 20;
/// Longest `byteorder` entry read (it says `little` or `big`).
const MAX_BYTEORDER_BYTES: u64 = 16;
/// The legacy format's magic number (`torch.serialization.MAGIC_NUMBER`), little-endian.
const LEGACY_MAGIC: [u8; 10] = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];
/// Most `.pkl` entries of a zip read to judge their imports.
const MAX_SIDE_PICKLES: usize = 64;
/// Most tar headers walked (torch writes four members).
const MAX_TAR_MEMBERS: usize = 256;
/// The first read of a record in a tar's `storages` member; grown while a record's pickle runs
/// past it.
const FIRST_RECORD_WINDOW: u64 = 64 << 10;

/// The imports `tree` names, kept apart from it.
fn owned_globals(tree: &Tree) -> impl Iterator<Item = (String, String, u64)> + '_ {
    tree.globals().map(|(m, n, at)| (m.to_owned(), n.to_owned(), at))
}

/// Whether two's-complement little-endian `b` is the magic number, in any length (sign bytes
/// padded on, as an 11-byte LONG1 or a LONG4 has them).
fn is_legacy_magic(b: &[u8]) -> bool {
    let mut b = b;
    while b.len() > LEGACY_MAGIC.len() && b.last() == Some(&0) {
        b = &b[..b.len() - 1];
    }
    b == LEGACY_MAGIC
}

/// Which container held the pickle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    TorchZip,
    TorchLegacy,
    /// The tar archive of torch < 0.4.
    TorchTar,
    /// A TorchScript archive (`torch.jit.save`): a torch zip that also holds `constants.pkl`
    /// and the module's code.
    TorchScript,
    Plain,
}

impl Container {
    pub fn name(self) -> &'static str {
        match self {
            Container::TorchZip => "torch zip",
            Container::TorchLegacy => "torch legacy",
            Container::TorchTar => "torch tar",
            Container::TorchScript => "torchscript",
            Container::Plain => "pickle",
        }
    }
}

/// One import the pickle would make.
#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    pub module: String,
    pub name: String,
    /// Absolute offset of the opcode that names it.
    pub at: u64,
    pub verdict: Verdict,
}

/// Where a storage's bytes are: their start and length in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    pub start: u64,
    pub len: u64,
}

/// What one pickle file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct PickleRead {
    pub container: Container,
    pub protocol: u8,
    pub tensors: Vec<PickledTensor>,
    /// Storage key → its bytes, for the storages found.
    pub storages: HashMap<String, Located>,
    pub imports: Vec<Import>,
    pub findings: Vec<Finding>,
    /// What the container says: `archive`, `byteorder`, the legacy protocol.
    pub facts: Vec<(String, String)>,
    /// Whether the archive's `byteorder` says big-endian: values are listed, not decoded.
    pub big_endian: bool,
    /// Whether `torch.load(weights_only=True)` loads it.
    pub weights_only: WeightsOnly,
}

/// The legacy format's storage keys, in the order their bytes follow, and where they begin.
type LegacyKeys = (Vec<String>, u64);
/// Imports as `(module, name, at)`.
type Globals = Vec<(String, String, u64)>;
/// A legacy file's first pickles: the object's tree, its storage keys, the imports of the
/// pickles around it, and the first opcode among those that weights_only refuses.
type LegacyRead = (Tree, Option<LegacyKeys>, Globals, Option<(u8, u64)>);

impl PickleRead {
    /// Nothing read yet from a file of this container.
    fn empty(container: Container) -> Self {
        PickleRead {
            container,
            protocol: 0,
            tensors: vec![],
            storages: HashMap::default(),
            imports: vec![],
            findings: vec![],
            facts: vec![],
            big_endian: false,
            weights_only: WeightsOnly::default(),
        }
    }

    /// Whether a zip held a `data.pkl`, the object torch.load reads (else it is not torch's).
    pub fn found_data_pkl(&self) -> bool {
        self.facts.iter().any(|(k, _)| k == "archive")
    }
}

enum State {
    ZipTail,
    Zip64Locator(zip::End),
    Zip64End(zip::End, u64),
    ZipDir(zip::End),
    /// Local headers to read: (entry index, purpose).
    ZipLocal(Vec<zip::Entry>, Vec<(usize, Purpose)>),
    ZipBytes(Vec<zip::Entry>, Vec<(usize, Purpose)>, Purpose, ByteRange),
    Prefix(u64),
    LegacySizes {
        keys: Vec<String>,
        next: usize,
        at: u64,
    },
    /// A tar's headers, walked from the next one.
    TarHeaders(TarWalk),
    /// The data of a tar extension header (PAX records, a GNU long name).
    TarExtension(TarWalk, tar::Kind, ByteRange),
    /// The records of the `storages` member.
    TarStorages(TarLeft, StorageWalk),
    /// A whole member: the `tensors` records, or the object pickle.
    TarMember(TarLeft, TarRole, ByteRange),
    Done,
}

/// Where a tar's header walk is.
#[derive(Default)]
struct TarWalk {
    /// The next header's offset.
    at: u64,
    members: Vec<TarMember>,
    /// What extension headers set for the next member (the first one read wins, as the
    /// outermost does in Python).
    next: tar::Pax,
    /// The path a global PAX header sets for every later member.
    global_path: Option<Vec<u8>>,
    /// Whether the last header read was an extension, which needs a member after it.
    after_extension: bool,
}

/// One member of a tar.
struct TarMember {
    name: Vec<u8>,
    kind: tar::Kind,
    start: u64,
    size: u64,
}

/// The members of a tar still to read, after the `storages` records.
#[derive(Clone, Copy)]
struct TarLeft {
    tensors: Option<ByteRange>,
    pickle: Option<ByteRange>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TarRole {
    Tensors,
    Pickle,
}

/// Where the `storages` records are read.
#[derive(Clone, Copy)]
struct StorageWalk {
    member: ByteRange,
    /// The next record's offset.
    at: u64,
    window: u64,
    /// Storage records left (`None` before the count is read).
    left: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    Pickle,
    ByteOrder,
    Storage,
    /// Another `.pkl` entry: read only for its imports.
    Scan,
    /// A TorchScript archive's `constants.pkl`: the tensors its code uses.
    Constants,
}

/// Decodes a pickle checkpoint by ranges: the zip's directory and local headers, the pickle,
/// the legacy format's storage sizes; never a storage's bytes.
pub struct PickleDecoder {
    file_len: u64,
    state: State,
    want: Option<ByteRange>,
    buf: Vec<u8>,
    out: PickleRead,
    tree: Option<Tree>,
    /// The zip entries' folder (`archive/`): storages are `<prefix>data/<key>`.
    prefix: String,
    /// The legacy format's storage key → bytes per element of its storage type, for walking
    /// the storages.
    storage_widths: HashMap<String, u64>,
    /// The imports of pickles that are run on load but hold no tensors: the legacy format's
    /// magic, protocol, system info and keys, other `.pkl` entries of a zip, a tar's records.
    side_imports: Globals,
    /// The first block is a tar header, but `tarfile` gives up on the archive later: torch then
    /// reads the file as the legacy format, and so does this.
    tar_refused: bool,
    /// A tar's storages by key, as its `storages` records give them.
    tar_storages: HashMap<String, torch::Storage>,
    /// A tar's tensors by key, as its `tensors` records give them (named by the object pickle).
    tar_tensors: HashMap<String, PickledTensor>,
    /// A TorchScript archive's constants (`CONSTANTS.c0`, …), their storages keyed
    /// `constants/<key>`.
    constants: Vec<PickledTensor>,
    /// Offsets of the imports of pickles torch.load does not unpickle (a zip's other `.pkl`
    /// entries): judged, but no part of what weights_only loads.
    not_loaded: Vec<u64>,
    /// The first opcode the weights-only unpickler refuses in a pickle torch.load reads.
    refused_opcode: Option<(u8, u64)>,
}

impl PickleDecoder {
    /// A decoder for a file of `file_len` bytes; `zip` when it starts with a zip local header.
    pub fn new(file_len: u64, zip: bool) -> Self {
        let container = if zip { Container::TorchZip } else { Container::Plain };
        PickleDecoder {
            file_len,
            state: if zip { State::ZipTail } else { State::Prefix(FIRST_PREFIX.min(file_len)) },
            want: None,
            buf: Vec::new(),
            out: PickleRead::empty(container),
            tree: None,
            prefix: String::new(),
            storage_widths: HashMap::default(),
            side_imports: Vec::new(),
            tar_refused: false,
            tar_storages: HashMap::default(),
            tar_tensors: HashMap::default(),
            constants: Vec::new(),
            not_loaded: Vec::new(),
            refused_opcode: None,
        }
    }

    /// An entry that cannot be used: `finding`, then the next entry, or the end when it was the
    /// pickle itself.
    fn unusable(&mut self, finding: Finding, purpose: Purpose, entries: Vec<zip::Entry>, todo: Vec<(usize, Purpose)>) {
        self.out.findings.push(finding);
        if purpose == Purpose::Pickle {
            self.finish();
        } else {
            self.state = State::ZipLocal(entries, todo);
        }
    }

    fn fail(&mut self, rule: Rule, msg: String) {
        self.out.findings.push(Finding::new(rule, msg));
        self.finish();
    }

    /// The bytes of `range`, once they are all fed.
    fn got(&mut self, range: ByteRange) -> Option<Vec<u8>> {
        if self.want != Some(range) {
            self.want = Some(range);
            self.buf.clear();
        }
        (self.buf.len() as u64 >= range.len()).then(|| std::mem::take(&mut self.buf)).inspect(|_| self.want = None)
    }

    fn finish(&mut self) {
        // A TorchScript archive's classes are its own, compiled from its code (which the
        // torchscript finding is about), not Python imports.
        let torchscript = self.out.container == Container::TorchScript;
        let verdict = |module: &str, name: &str| match module.split('.').next() {
            Some("__torch__") if torchscript => Verdict::Expected,
            _ => judge(module, name),
        };
        for (module, name, at) in std::mem::take(&mut self.side_imports) {
            let verdict = verdict(&module, &name);
            self.out.imports.push(Import { module, name, at, verdict });
        }
        if let Some(tree) = self.tree.take() {
            self.out.protocol = tree.protocol;
            for (module, name, at) in tree.globals() {
                self.out.imports.push(Import {
                    module: module.into(),
                    name: name.into(),
                    at,
                    verdict: verdict(module, name),
                });
            }
            crate::sort::sort_by_key(&mut self.out.imports, |i| i.at);
            if let Some(s) = &tree.stopped {
                self.out.findings.push(Finding::new(
                    rules::STOPPED,
                    format!("the pickle stops being read at byte {}: {}; what was read before is shown", s.at, s.why),
                ));
            }
            let found = torch::found_in(&tree, &self.tar_tensors);
            let mut cap = crate::findings::RuleCap::default();
            for (name, rebuild) in found.not_read {
                self.out.findings.push(Finding::new(
                    rules::TENSOR_NOT_READ,
                    format!(
                        "tensor '{name}' is rebuilt by torch._utils.{rebuild} (a kind not read here): it is not listed"
                    ),
                ));
                cap.trim(&mut self.out.findings);
            }
            cap.finish(&mut self.out.findings);
            // A numpy array's bytes lie in the pickle itself.
            for t in &found.tensors {
                if let Some(torch::Inline::Raw(at)) = t.storage.inline {
                    self.out.storages.insert(t.storage.key.clone(), at);
                }
            }
            self.out.tensors = found.tensors;
            self.refused_opcode = self.refused_opcode.or(tree.refused_opcode);
        }
        self.out.tensors.append(&mut self.constants);
        let reason = match (self.out.container, self.refused_opcode) {
            (Container::TorchScript, _) => {
                Some("a TorchScript archive, which torch.load refuses with weights_only".into())
            }
            (Container::Plain, _) => {
                Some("a plain pickle, not torch.save's format: torch.load stops at its missing magic number".into())
            }
            (_, Some((op, at))) => Some(format!(
                "opcode {} (0x{op:02x}) at byte {at} is not one its unpickler runs",
                weights_only::opcode_name(op)
            )),
            _ => None,
        };
        // torch.load refuses a TorchScript archive before it unpickles anything.
        let loaded = self.out.imports.iter().filter(|i| !torchscript && !self.not_loaded.contains(&i.at));
        self.out.weights_only = WeightsOnly::of(loaded.map(|i| (i.module.as_str(), i.name.as_str())), reason);
        self.state = State::Done;
    }

    /// Run the pickle starting at `at` in `bytes` (whose first byte is at absolute `base`).
    fn run_at(bytes: &[u8], base: u64, at: u64) -> Tree {
        let from = (at - base) as usize;
        machine::run(&bytes[from.min(bytes.len())..], at)
    }

    /// The legacy format's pickles in `prefix` (the file's first bytes): `None` when they run
    /// past the prefix (read more), else the object's tree and, for the legacy format, the
    /// storage keys and where the storages begin.
    /// The imports of the pickles around it (magic, protocol, system info, keys), which
    /// `torch.load` runs as well, come with it.
    /// The first opcode of the pickles around it that weights_only refuses comes last.
    fn legacy(prefix: &[u8]) -> Option<LegacyRead> {
        let first = machine::run(prefix, 0);
        if first.truncated {
            return None;
        }
        // torch compares the number's value, however the pickle encodes it.
        let magic = matches!(first.root.and_then(|r| first.get(r)), Some(Node::BigInt(b)) if is_legacy_magic(b));
        if !magic {
            return Some((first, None, Vec::new(), None));
        }
        let mut at = first.end?;
        let mut trees = vec![first];
        for _ in 0..4 {
            let t = Self::run_at(prefix, 0, at);
            if t.truncated {
                return None;
            }
            at = t.end?;
            trees.push(t);
        }
        let keys_tree = trees.pop()?;
        let object = trees.pop()?;
        let keys = keys_tree
            .root
            .and_then(|r| keys_tree.items(r))
            .map(|items| items.iter().map(|&k| keys_tree.str(k).unwrap_or_default().to_owned()).collect())
            .unwrap_or_default();
        let side = trees.iter().chain([&keys_tree]).flat_map(owned_globals).collect();
        let refused = trees.iter().chain([&keys_tree]).find_map(|t| t.refused_opcode);
        Some((object, Some((keys, at)), side, refused))
    }

    /// A TorchScript archive's constants: the tuple `constants.pkl` holds, each named as its
    /// code names it (`CONSTANTS.c0`, …), its storage `constants/<key>`; the storage entries to
    /// read come back (missing ones are findings).
    fn constants_from(&mut self, tree: &Tree, entries: &[zip::Entry]) -> Vec<(usize, Purpose)> {
        let mut reads = Vec::new();
        for mut t in torch::tensors(tree) {
            let key = format!("constants/{}", t.storage.key);
            match entries.iter().position(|e| e.name == format!("{}{key}", self.prefix)) {
                Some(i) if !reads.contains(&(i, Purpose::Storage)) => reads.push((i, Purpose::Storage)),
                Some(_) => {}
                None => self.out.findings.push(Finding::new(
                    rules::MISSING_STORAGE,
                    format!("storage {key} is not in the zip ({}{key}): its tensors have no data", self.prefix),
                )),
            }
            t.name = format!("CONSTANTS.c{}", t.name);
            t.storage.key = key;
            self.constants.push(t);
        }
        reads
    }

    fn advance(&mut self) -> Option<ByteRange> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return None,
                State::ZipTail => {
                    let start = self.file_len.saturating_sub(zip::TAIL_BYTES);
                    let range = ByteRange::new(start, self.file_len);
                    let Some(tail) = self.got(range) else {
                        self.state = State::ZipTail;
                        return Some(range);
                    };
                    match zip::find_end(&tail, start) {
                        None => {
                            self.fail(rules::BAD_ZIP, "no end-of-central-directory record: the zip is cut short".into())
                        }
                        Some(end) if end.zip64 => self.state = State::Zip64Locator(end),
                        Some(end) => self.state = State::ZipDir(end),
                    }
                }
                State::Zip64Locator(end) => {
                    let Some(from) = end.at.checked_sub(20) else {
                        self.fail(rules::BAD_ZIP, "the ZIP64 locator lies before the file".into());
                        continue;
                    };
                    let range = ByteRange::new(from, end.at);
                    let Some(b) = self.got(range) else {
                        self.state = State::Zip64Locator(end);
                        return Some(range);
                    };
                    match zip::zip64_locator(&b) {
                        Some(at) if at.checked_add(56).is_some_and(|e| e <= self.file_len) => {
                            self.state = State::Zip64End(end, at)
                        }
                        _ => self.fail(rules::BAD_ZIP, "the ZIP64 end record is missing or past the end".into()),
                    }
                }
                State::Zip64End(end, at) => {
                    let range = ByteRange::new(at, at + 56);
                    let Some(b) = self.got(range) else {
                        self.state = State::Zip64End(end, at);
                        return Some(range);
                    };
                    match zip::zip64_end(&b, end) {
                        Some(end) => self.state = State::ZipDir(end),
                        None => self.fail(rules::BAD_ZIP, format!("no ZIP64 end record at byte {at}")),
                    }
                }
                State::ZipDir(end) => {
                    let Some(dir_end) = end.dir_offset.checked_add(end.dir_size).filter(|&e| e <= self.file_len) else {
                        self.fail(
                            rules::BAD_ZIP,
                            format!(
                                "the central directory ({} bytes at {}) runs past the end",
                                end.dir_size, end.dir_offset
                            ),
                        );
                        continue;
                    };
                    if end.dir_size > zip::MAX_DIRECTORY_BYTES {
                        self.fail(
                            rules::TOO_LARGE,
                            format!("the central directory is {} bytes; not read", end.dir_size),
                        );
                        continue;
                    }
                    let range = ByteRange::new(end.dir_offset, dir_end);
                    let Some(dir) = self.got(range) else {
                        self.state = State::ZipDir(end);
                        return Some(range);
                    };
                    let entries = match zip::entries(&dir, end.entries) {
                        Ok(e) => e,
                        Err(why) => {
                            self.fail(rules::BAD_ZIP, why);
                            continue;
                        }
                    };
                    // Of several (a hostile zip can repeat a name), torch reads the last.
                    let pkl = entries
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.name == "data.pkl" || e.name.ends_with("/data.pkl"))
                        .min_by_key(|&(i, e)| (e.name.len(), std::cmp::Reverse(i)))
                        .map(|(i, _)| i);
                    let Some(pkl) = pkl else {
                        self.fail(
                            rules::NO_DATA_PKL,
                            format!("the zip holds {} entries but no data.pkl", entries.len()),
                        );
                        continue;
                    };
                    self.prefix = entries[pkl].name.trim_end_matches("data.pkl").to_owned();
                    self.out.facts.push(("archive".into(), self.prefix.trim_end_matches('/').to_owned()));
                    let same = entries.iter().filter(|e| e.name == entries[pkl].name).count();
                    if same > 1 {
                        self.out.findings.push(Finding::new(
                            rules::BAD_ZIP_MINOR,
                            format!(
                                "the zip holds {same} entries named {}: torch reads the last, and every one is scanned",
                                entries[pkl].name
                            ),
                        ));
                    }
                    // Every other pickle in the zip is judged too, as scanners do: what loads
                    // it (torch.load, a library reading its own entry) runs its imports. They
                    // are read first, so a data.pkl that cannot be used does not skip them.
                    // torch.load takes a zip that holds constants.pkl for TorchScript (and hands it
                    // to torch.jit.load), which compiles and runs the code under code/.
                    let constants = entries.iter().position(|e| e.name == format!("{}constants.pkl", self.prefix));
                    if constants.is_some() {
                        self.out.container = Container::TorchScript;
                        let code = entries.iter().filter(|e| e.name.starts_with(&format!("{}code/", self.prefix)));
                        self.out.findings.push(Finding::new(rules::TORCHSCRIPT,
                            format!(
                                "a TorchScript archive: torch.jit.load (which torch.load hands it to) compiles and runs \
                                 the code of its {} code/ entries, TorchScript that can call any operator torch has; \
                                 its tensors are listed from data.pkl and constants.pkl",
                                code.count()
                            ),
                        ));
                    }
                    let others: Vec<usize> = (0..entries.len())
                        .filter(|&i| i != pkl && Some(i) != constants && entries[i].name.ends_with(".pkl"))
                        .collect();
                    if others.len() > MAX_SIDE_PICKLES {
                        self.out.findings.push(Finding::new(
                            rules::TOO_LARGE_MINOR,
                            format!(
                                "the zip holds {} more .pkl entries; the first {MAX_SIDE_PICKLES} are scanned",
                                others.len()
                            ),
                        ));
                    }
                    let mut todo: Vec<(usize, Purpose)> =
                        others.into_iter().take(MAX_SIDE_PICKLES).map(|i| (i, Purpose::Scan)).collect();
                    todo.extend(constants.map(|i| (i, Purpose::Constants)));
                    todo.push((pkl, Purpose::Pickle));
                    if let Some(b) = entries.iter().position(|e| e.name == format!("{}byteorder", self.prefix)) {
                        todo.push((b, Purpose::ByteOrder));
                    }
                    todo.reverse();
                    self.state = State::ZipLocal(entries, todo);
                }
                State::ZipLocal(entries, mut todo) => {
                    let Some(&(i, purpose)) = todo.last() else {
                        self.finish();
                        continue;
                    };
                    let e = &entries[i];
                    let range = ByteRange::new(e.local, e.local.saturating_add(30).min(self.file_len));
                    let Some(h) = self.got(range) else {
                        self.state = State::ZipLocal(entries, todo);
                        return Some(range);
                    };
                    todo.pop();
                    let Some(start) = zip::data_start(&h, e.local) else {
                        let msg = format!("{}: no local header at byte {}", e.name, e.local);
                        self.unusable(Finding::new(rules::BAD_ZIP, msg), purpose, entries, todo);
                        continue;
                    };
                    let len = e.compressed;
                    if start.checked_add(len).is_none_or(|end| end > self.file_len) {
                        let msg = format!("{}: its {len} bytes at {start} run past the end of the file", e.name);
                        self.unusable(Finding::new(rules::BAD_ZIP, msg), purpose, entries, todo);
                        continue;
                    }
                    match purpose {
                        Purpose::Storage => {
                            // `data/<key>`, or a TorchScript constant's `constants/<key>`.
                            let rel = &e.name[self.prefix.len()..];
                            let key = rel.strip_prefix("data/").unwrap_or(rel).to_owned();
                            if e.method != 0 {
                                let msg =
                                    format!("{}: compressed (method {}); its values are not read", e.name, e.method);
                                self.out.findings.push(Finding::new(rules::COMPRESSED_MINOR, msg));
                            } else {
                                self.out.storages.insert(key, Located { start, len });
                            }
                            self.state = State::ZipLocal(entries, todo);
                        }
                        Purpose::Scan | Purpose::Constants if e.method != 0 || len > MAX_PICKLE_BYTES => {
                            let msg = format!(
                                "{} ({len} bytes, method {}) is not read, so its imports are not judged",
                                e.name, e.method
                            );
                            self.unusable(Finding::new(rules::COMPRESSED_MINOR, msg), purpose, entries, todo);
                        }
                        _ if e.method != 0 => {
                            let msg = format!("{} is compressed (method {}): not read", e.name, e.method);
                            self.unusable(Finding::new(rules::COMPRESSED, msg), purpose, entries, todo);
                        }
                        Purpose::ByteOrder if len > MAX_BYTEORDER_BYTES => {
                            let msg = format!("{} is {len} bytes, not \"little\" or \"big\": not read", e.name);
                            self.unusable(Finding::new(rules::BAD_ZIP_MINOR, msg), purpose, entries, todo);
                        }
                        _ if len > MAX_PICKLE_BYTES => {
                            self.fail(
                                rules::TOO_LARGE,
                                format!("{} is {len} bytes, over {MAX_PICKLE_BYTES}: not read", e.name),
                            );
                        }
                        _ => self.state = State::ZipBytes(entries, todo, purpose, ByteRange::new(start, start + len)),
                    }
                }
                State::ZipBytes(entries, mut todo, purpose, range) => {
                    let Some(b) = self.got(range) else {
                        self.state = State::ZipBytes(entries, todo, purpose, range);
                        return Some(range);
                    };
                    if purpose == Purpose::Scan {
                        let tree = machine::run(&b, range.start);
                        self.not_loaded.extend(tree.globals().map(|(_, _, at)| at));
                        self.side_imports.extend(owned_globals(&tree));
                        self.state = State::ZipLocal(entries, todo);
                        continue;
                    }
                    if purpose == Purpose::Constants {
                        let tree = machine::run(&b, range.start);
                        self.not_loaded.extend(tree.globals().map(|(_, _, at)| at));
                        self.side_imports.extend(owned_globals(&tree));
                        let storages = self.constants_from(&tree, &entries);
                        todo.splice(0..0, storages);
                        self.state = State::ZipLocal(entries, todo);
                        continue;
                    }
                    if purpose == Purpose::ByteOrder {
                        let order = String::from_utf8_lossy(&b).trim().to_owned();
                        if order == "big" {
                            self.out.big_endian = true;
                            self.out.findings.push(Finding::new(
                                rules::BIG_ENDIAN,
                                "byteorder says big-endian: the tensors are listed, their values are not decoded",
                            ));
                        }
                        self.out.facts.push(("byteorder".into(), order));
                        self.state = State::ZipLocal(entries, todo);
                        continue;
                    }
                    let tree = machine::run(&b, range.start);
                    // The storages the tensors use, each by its `data/<key>` entry.
                    let keys: std::collections::BTreeSet<String> =
                        torch::tensors(&tree).into_iter().map(|t| t.storage.key).collect();
                    let by_name: HashMap<&str, usize> =
                        entries.iter().enumerate().map(|(i, e)| (e.name.as_str(), i)).collect();
                    // Read after what is left to do, in key order (the list is taken from its end).
                    let mut storages = Vec::new();
                    for k in &keys {
                        match by_name.get(format!("{}data/{k}", self.prefix).as_str()) {
                            Some(&i) => storages.push((i, Purpose::Storage)),
                            None => self.out.findings.push(Finding::new(
                                rules::MISSING_STORAGE,
                                format!(
                                    "storage {k} is not in the zip ({}data/{k}): its tensors have no data",
                                    self.prefix
                                ),
                            )),
                        }
                    }
                    storages.reverse();
                    todo.splice(0..0, storages);
                    self.tree = Some(tree);
                    self.state = State::ZipLocal(entries, todo);
                }
                State::Prefix(len) => {
                    let range = ByteRange::new(0, len);
                    let Some(prefix) = self.got(range) else {
                        self.state = State::Prefix(len);
                        return Some(range);
                    };
                    // torch.load tries a tar first: a file whose first block is a tar header is
                    // one, whatever else it could be read as.
                    if !self.tar_refused && tar::is_header(&prefix) {
                        self.out.container = Container::TorchTar;
                        // Should tarfile give up later, torch reads the legacy format from byte
                        // 0: the imports that would run then are judged too.
                        match Self::legacy(&prefix) {
                            Some((tree, _, side, _)) => {
                                self.side_imports.extend(side.into_iter().chain(owned_globals(&tree)))
                            }
                            None => self.side_imports.extend(owned_globals(&machine::run(&prefix, 0))),
                        }
                        self.state = State::TarHeaders(TarWalk::default());
                        continue;
                    }
                    match Self::legacy(&prefix) {
                        None if len < self.file_len.min(MAX_PICKLE_BYTES) => {
                            self.state = State::Prefix(len.saturating_mul(4).min(self.file_len).min(MAX_PICKLE_BYTES));
                        }
                        None => {
                            // Cut short even read whole: show what the first pickle built.
                            self.tree = Some(machine::run(&prefix, 0));
                            self.finish();
                        }
                        Some((tree, None, _, _)) => {
                            self.tree = Some(tree);
                            self.finish();
                        }
                        Some((tree, Some((keys, at)), side, refused)) => {
                            self.out.container = Container::TorchLegacy;
                            self.side_imports = side;
                            self.refused_opcode = refused;
                            // The sizes are counted in elements of the storage's own type (an
                            // UntypedStorage's in bytes), whatever dtype the tensor views it as.
                            self.storage_widths = torch::tensors(&tree)
                                .into_iter()
                                .filter_map(|t| Some((t.storage.key, torch::storage_width(&t.storage.type_name)?)))
                                .collect();
                            self.tree = Some(tree);
                            self.state = State::LegacySizes { keys, next: 0, at };
                        }
                    }
                }
                State::LegacySizes { keys, next, at } => {
                    let Some(key) = keys.get(next).cloned() else {
                        self.finish();
                        continue;
                    };
                    let range = ByteRange::new(at, at.saturating_add(8).min(self.file_len));
                    if range.len() < 8 {
                        self.out.findings.push(Finding::new(
                            rules::MISSING_STORAGE,
                            format!("the file ends at byte {} before storage {key} (of {})", self.file_len, keys.len()),
                        ));
                        self.finish();
                        continue;
                    }
                    let Some(b) = self.got(range) else {
                        self.state = State::LegacySizes { keys, next, at };
                        return Some(range);
                    };
                    let numel = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
                    let Some(width) = self.storage_widths.get(&key).copied() else {
                        self.out.findings.push(Finding::new(
                            rules::UNKNOWN_STORAGE,
                            format!(
                                "storage {key} has no known element type, so the storages after it cannot be found"
                            ),
                        ));
                        self.finish();
                        continue;
                    };
                    let start = at + 8;
                    let end =
                        numel.checked_mul(width).and_then(|n| start.checked_add(n)).filter(|&e| e <= self.file_len);
                    let Some(end) = end else {
                        self.out.findings.push(Finding::new(
                            rules::STORAGE_TOO_SMALL,
                            format!("storage {key} declares {numel} elements, past the end of the file"),
                        ));
                        self.finish();
                        continue;
                    };
                    self.out.storages.insert(key, Located { start, len: end - start });
                    self.state = State::LegacySizes { keys, next: next + 1, at: end };
                }
                State::TarHeaders(walk) => {
                    if let Some(range) = self.tar_header(walk) {
                        return Some(range);
                    }
                }
                State::TarExtension(mut walk, kind, range) => {
                    let Some(data) = self.got(range) else {
                        self.state = State::TarExtension(walk, kind, range);
                        return Some(range);
                    };
                    match kind {
                        tar::Kind::Pax { global } => {
                            let mut pax = tar::Pax::default();
                            if tar::Pax::read(&data, &mut pax).is_none() {
                                // tarfile calls the header invalid: the members end before it.
                                self.tar_end(walk, false);
                                continue;
                            }
                            if global {
                                walk.global_path = pax.path.or(walk.global_path);
                            } else {
                                walk.next.path = walk.next.path.or(pax.path);
                                walk.next.size = walk.next.size.or(pax.size);
                            }
                        }
                        tar::Kind::GnuLong { name: true } => {
                            let name = data.split(|&b| b == 0).next().unwrap_or_default().to_vec();
                            walk.next.path = walk.next.path.or(Some(name));
                        }
                        _ => {}
                    }
                    match tar::padded(range.len()).and_then(|p| range.start.checked_add(p)) {
                        Some(at) => {
                            walk.at = at;
                            walk.after_extension = true;
                            self.state = State::TarHeaders(walk);
                        }
                        None => self.tar_end(walk, true),
                    }
                }
                State::TarStorages(left, walk) => {
                    if let Some(range) = self.tar_storages(left, walk) {
                        return Some(range);
                    }
                }
                State::TarMember(left, role, range) => {
                    let Some(b) = self.got(range) else {
                        self.state = State::TarMember(left, role, range);
                        return Some(range);
                    };
                    match role {
                        TarRole::Tensors => {
                            self.tar_tensor_records(&b, range.start);
                            self.tar_next(TarLeft { tensors: None, ..left });
                        }
                        TarRole::Pickle => {
                            self.tree = Some(machine::run(&b, range.start));
                            self.finish();
                        }
                    }
                }
            }
        }
    }
}

impl Decoder for PickleDecoder {
    type Output = PickleRead;

    fn step(&mut self) -> Step<PickleRead> {
        match self.advance() {
            Some(range) => {
                let have = self.buf.len() as u64;
                Step::Need(ByteRange::new(range.start + have, range.end))
            }
            None => {
                if self.out.container == Container::Plain && !self.out.tensors.is_empty() {
                    self.out.findings.push(Finding::new(rules::NO_STORAGES,
                        "a plain pickle: its tensors name storages this file does not hold, so their values are not read",
                    ));
                }
                Step::Done(std::mem::replace(&mut self.out, PickleRead::empty(Container::Plain)))
            }
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        let Some(want) = self.want else { return Ok(()) };
        let expected = want.start + self.buf.len() as u64;
        if offset != expected {
            return Err(FeedError { expected, got: offset });
        }
        let room = (want.len() - self.buf.len() as u64) as usize;
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
        Ok(())
    }
}

/// The element width of a storage's dtype.
pub fn width(d: Dtype) -> Option<u64> {
    d.nbytes(1)
}
