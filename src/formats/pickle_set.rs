//! Pickle files as one [`Checkpoint`]: tensors located in their storages (row-major views of
//! stored bytes only), every import with its verdict as a finding, the container's facts as
//! metadata.

use std::collections::BTreeMap;

use crate::findings::Finding;
use crate::model::{Checkpoint, Dtype, Extent, FileInfo, Format, Lost, MetaValue, Tensor};
use crate::pickle::safety::Verdict;
use crate::pickle::torch::{Inline, Layout};
use crate::pickle::weights_only::WeightsOnly;
use crate::pickle::{rules, Container, PickleRead};

/// The pickle files given (shards of one model are listed together, file by file).
pub fn pickle_set(files: Vec<(FileInfo, PickleRead)>) -> Checkpoint {
    let mut cp = Checkpoint::empty(Format::Pickle);
    let mut weights = Vec::new();
    let mut files = files;
    crate::sort::sort_by(&mut files, |a, b| a.0.path.cmp(&b.0.path));
    for (i, (info, read)) in files.into_iter().enumerate() {
        let big_endian = read.big_endian;
        let mut meta = vec![("pickle.container".to_owned(), read.container.name().to_owned())];
        if read.protocol > 0 {
            meta.push(("pickle.protocol".into(), read.protocol.to_string()));
        }
        meta.extend(read.facts.iter().map(|(k, v)| (format!("pickle.{k}"), v.clone())));
        for (k, v) in meta {
            if cp.meta(&k).is_none() {
                cp.metadata.push((k, MetaValue::Text(v)));
                cp.meta_file.push(i);
            }
        }
        let first = cp.tensors.len();
        for t in &read.tensors {
            let dtype = match t.storage.dtype {
                Some(d) => Dtype::Safetensors(d),
                None => Dtype::Unknown(t.storage.type_name.clone()),
            };
            let elems = t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            // A type not decoded (complex128, a storage type of its own) still has a known width.
            let width = match t.storage.dtype {
                Some(d) => d.nbytes(1),
                None => crate::pickle::torch::storage_width(&t.storage.type_name),
            };
            if t.storage.dtype.is_none() {
                cp.findings.push(
                    Finding::new(
                        rules::UNDECODED_TYPE,
                        format!("its element type {} is not decoded: its values are not read", t.storage.type_name),
                    )
                    .in_file(i)
                    .on_tensor(&t.name),
                );
            }
            let nbytes = elems.zip(width).and_then(|(e, w)| e.checked_mul(w));
            let storage = read.storages.get(&t.storage.key);
            let offset = storage.zip(width).and_then(|(s, w)| t.storage_offset.checked_mul(w)?.checked_add(s.start));
            let layout = t.layout();
            let data = match (storage, offset, nbytes) {
                (None, _, _) if t.storage.inline == Some(Inline::Text) => Err(Lost::InlineText),
                (None, _, _) if t.storage.inline == Some(Inline::BigEndian) => Err(Lost::BigEndian),
                (None, _, _) => Err(Lost::NoStorage),
                (_, _, None) | (_, None, _) => Err(Lost::NoSize),
                _ if big_endian => Err(Lost::BigEndian),
                _ if layout == Layout::Strided => Err(Lost::Strided),
                (Some(s), Some(o), Some(n)) => match o.checked_add(n) {
                    Some(end) if end <= s.start + s.len => Extent::check(&dtype, &t.shape, o, n, info.size),
                    _ => {
                        cp.findings.push(
                            Finding::new(
                                rules::STORAGE_TOO_SMALL,
                                format!(
                                    "it views {n} bytes from element {} of storage {}, which holds {} bytes",
                                    t.storage_offset, t.storage.key, s.len
                                ),
                            )
                            .in_file(i)
                            .on_tensor(&t.name),
                        );
                        Err(Lost::PastEnd { end: o.checked_add(n), file_len: s.start + s.len })
                    }
                },
            };
            if data == Err(Lost::Strided) {
                cp.findings.push(
                    Finding::new(
                        rules::NOT_CONTIGUOUS,
                        format!(
                            "shape {:?} with strides {:?} skips or repeats elements: its values are not read",
                            t.shape, t.strides
                        ),
                    )
                    .in_file(i)
                    .on_tensor(&t.name),
                );
            }
            cp.tensors.push(Tensor {
                name: t.name.clone(),
                dtype,
                shape: t.shape.clone(),
                file: i,
                offset,
                nbytes: nbytes.unwrap_or(0),
                data,
                strides: (layout == Layout::Permuted).then(|| t.strides.clone()),
            });
        }
        // Two paths of the pickle can flatten to one name ({'a': {'b': x}, 'a.b': y}).
        let names = &cp.tensors[first..];
        let mut dupes = Vec::new();
        let mut cap = crate::findings::RuleCap::default();
        for j in crate::dupes::repeated(names.len(), crate::dupes::Keep::First, |j| names[j].name.as_str()) {
            let f = Finding::new(
                rules::DUPLICATE_NAME,
                "more than one tensor of the pickle is named so (two paths flatten to one dotted name); \
                 the first is the one opened by name",
            );
            dupes.push(f.in_file(i).on_tensor(&names[j].name));
            cap.trim(&mut dupes);
        }
        cap.finish(&mut dupes);
        cp.findings.append(&mut dupes);
        cp.findings.extend(import_findings(&info.path, &read).into_iter().map(|f| f.in_file(i)));
        // A TorchScript archive has a finding of its own; a plain pickle is no torch.save file.
        if !matches!(read.container, Container::TorchScript | Container::Plain) {
            cp.findings.extend(weights_only_finding(&info.path, &read.weights_only).map(|f| f.in_file(i)));
        }
        weights.push(read.weights_only.clone());
        cp.findings.extend(read.findings.into_iter().map(|f| f.in_file(i)));
        cp.imports.extend(read.imports.into_iter().map(|imp| (i, imp)));
        cp.big_endian.push(false);
        cp.files.push(info);
    }
    cp.weights_only = Some(WeightsOnly::merge(weights.into_iter()));
    cp
}

/// A warning when `torch.load(weights_only=True)`, torch's default since 2.6, does not load the
/// file: the globals to allowlist (the `add_safe_globals` line), or why it cannot load at all.
fn weights_only_finding(path: &str, w: &WeightsOnly) -> Option<Finding> {
    (!w.loads).then(|| Finding::new(rules::WEIGHTS_ONLY_REJECTS, format!("{path}: {}", w.sentence())))
}

/// One finding per distinct import that is not expected: errors for the dangerous ones.
fn import_findings(path: &str, read: &PickleRead) -> Vec<Finding> {
    let mut seen: BTreeMap<(Verdict, &str, &str), (u64, u64)> = BTreeMap::new();
    for imp in &read.imports {
        let e = seen.entry((imp.verdict, &imp.module, &imp.name)).or_insert((imp.at, 0));
        e.1 += 1;
    }
    let what = match read.container {
        Container::TorchZip | Container::TorchScript => "a pickle of the zip",
        Container::TorchTar => "a pickle of the tar",
        _ => "the pickle",
    };
    let mut out: Vec<Finding> = seen
        .into_iter()
        .rev()
        .filter_map(|((verdict, module, name), (at, n))| {
            let times = if n > 1 { format!(", {n} times") } else { String::new() };
            match verdict {
                Verdict::Dangerous => Some(Finding::new(
                    rules::DANGEROUS_IMPORT,
                    format!(
                        "{path}: {what} imports {module}.{name} (byte {at}{times}), which runs programs or reaches \
                         outside: loading this file with torch.load or pickle would run it"
                    ),
                )),
                Verdict::Unknown => Some(Finding::new(
                    rules::UNKNOWN_IMPORT,
                    format!(
                        "{path}: {what} imports {module}.{name} (byte {at}{times}), which a checkpoint does not need: \
                         loading this file runs that code"
                    ),
                )),
                Verdict::Expected => None,
            }
        })
        .collect();
    crate::sort::sort_by_key(&mut out, |f| std::cmp::Reverse(f.severity));
    out
}
