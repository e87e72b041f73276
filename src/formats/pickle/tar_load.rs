//! The pickle decoder's steps through a torch tar archive: the header walk, then the members in
//! the order `legacy_load` reads them (`storages`, `tensors`, `pickle`). Every pickle in them
//! is judged; `sys_info`, which torch never unpickles, is not read.

use super::tar::{self, Kind, BLOCK};
use super::{
    machine, owned_globals, rules, tar_records, torch, Located, PickleDecoder, State, StorageWalk, TarLeft, TarMember,
    TarRole, TarWalk, FIRST_PREFIX, FIRST_RECORD_WINDOW, MAX_PICKLE_BYTES, MAX_TAR_MEMBERS,
};
use crate::findings::Finding;
use crate::range::ByteRange;

impl PickleDecoder {
    /// One header of the walk: the range to read, or `None` once the state has moved on.
    pub(super) fn tar_header(&mut self, mut walk: TarWalk) -> Option<ByteRange> {
        if walk.members.len() >= MAX_TAR_MEMBERS {
            self.out.findings.push(Finding::new(
                rules::BAD_TAR_MINOR,
                format!("the tar holds more than {MAX_TAR_MEMBERS} members; those after are not read"),
            ));
            self.tar_end(walk, false);
            return None;
        }
        let end = walk.at.saturating_add(BLOCK);
        if end > self.file_len {
            // The file ends: so do the members.
            self.tar_end(walk, true);
            return None;
        }
        let range = ByteRange::new(walk.at, end);
        let Some(b) = self.got(range) else {
            self.state = State::TarHeaders(walk);
            return Some(range);
        };
        let Some(h) = tar::header(&b) else {
            self.tar_end(walk, true);
            return None;
        };
        let data = walk.at + BLOCK;
        match h.kind {
            Kind::Pax { .. } | Kind::GnuLong { .. } => {
                let fits = data.checked_add(h.size).is_some_and(|e| e <= self.file_len);
                if h.size <= tar::MAX_EXTENDED && fits {
                    self.state = State::TarExtension(walk, h.kind, ByteRange::new(data, data + h.size));
                    return None;
                }
                self.out.findings.push(Finding::new(
                    rules::BAD_TAR_MINOR,
                    format!(
                        "the tar's extension header at byte {} ({} bytes) is not read: a member it names is known \
                         by its own header's name",
                        walk.at, h.size
                    ),
                ));
                match tar::padded(h.size).and_then(|p| data.checked_add(p)) {
                    Some(at) => {
                        walk.at = at;
                        walk.after_extension = true;
                        self.state = State::TarHeaders(walk);
                    }
                    None => self.tar_end(walk, true),
                }
            }
            kind => {
                let name = walk.next.path.take().or_else(|| walk.global_path.clone()).unwrap_or(h.name);
                let size = walk.next.size.take().unwrap_or(h.size);
                walk.members.push(TarMember { name, kind, start: data, size });
                walk.after_extension = false;
                let next =
                    if kind.has_data() { tar::padded(size).and_then(|p| data.checked_add(p)) } else { Some(data) };
                match next {
                    Some(at) => {
                        walk.at = at;
                        self.state = State::TarHeaders(walk);
                    }
                    None => self.tar_end(walk, false),
                }
            }
        }
        None
    }

    /// The members end. When the walk stopped for a missing header right after an extension
    /// header (`stopped`), `tarfile` raises and torch reads the file as the legacy format: so
    /// does this. Else the members torch reads are chosen, the last of each name.
    pub(super) fn tar_end(&mut self, walk: TarWalk, stopped: bool) {
        if (stopped && walk.after_extension) || walk.members.is_empty() {
            self.out.findings.push(Finding::new(
                rules::BAD_TAR_MINOR,
                "the file starts with a tar header, but its archive ends inside an extension header: torch.load \
                 reads it as the legacy format instead, and so is it read here",
            ));
            self.tar_refused = true;
            self.side_imports.clear();
            self.out.container = super::Container::Plain;
            self.state = State::Prefix(FIRST_PREFIX.min(self.file_len));
            return;
        }
        let mut chosen = [None; 3];
        for (slot, name) in chosen.iter_mut().zip(["storages", "tensors", "pickle"]) {
            let Some(m) = walk.members.iter().rev().find(|m| m.name == name.as_bytes()) else {
                self.out.findings.push(Finding::new(
                    rules::BAD_TAR,
                    format!("the tar holds no member named {name}: torch.load fails on it"),
                ));
                continue;
            };
            let end = m.start.checked_add(m.size).filter(|&e| e <= self.file_len);
            match (m.kind, end) {
                (Kind::File, Some(end)) => *slot = Some(ByteRange::new(m.start, end)),
                (Kind::File, None) => self.out.findings.push(Finding::new(
                    rules::BAD_TAR,
                    format!("the tar member {name} ({} bytes at {}) runs past the end of the file", m.size, m.start),
                )),
                _ => self.out.findings.push(Finding::new(
                    rules::BAD_TAR,
                    format!("the tar member {name} is not a regular file (a link or a directory): not followed"),
                )),
            }
        }
        let [storages, tensors, pickle] = chosen;
        let left = TarLeft { tensors, pickle };
        match storages {
            Some(member) => {
                let walk = StorageWalk { member, at: member.start, window: FIRST_RECORD_WINDOW, left: None };
                self.state = State::TarStorages(left, walk);
            }
            None => self.tar_next(left),
        }
    }

    /// Read the next member left, or finish.
    pub(super) fn tar_next(&mut self, left: TarLeft) {
        let too_large = |r: ByteRange| r.len() > MAX_PICKLE_BYTES;
        match (left.tensors, left.pickle) {
            (Some(r), _) if too_large(r) => {
                self.out.findings.push(Finding::new(
                    rules::TOO_LARGE,
                    format!("the tar member tensors is {} bytes, over {MAX_PICKLE_BYTES}: not read", r.len()),
                ));
                self.tar_next(TarLeft { tensors: None, ..left });
            }
            (Some(r), _) => self.state = State::TarMember(left, TarRole::Tensors, r),
            (None, Some(r)) if too_large(r) => self.fail(
                rules::TOO_LARGE,
                format!("the tar member pickle is {} bytes, over {MAX_PICKLE_BYTES}: not read", r.len()),
            ),
            (None, Some(r)) => self.state = State::TarMember(left, TarRole::Pickle, r),
            (None, None) => self.finish(),
        }
    }

    /// Records of the `storages` member from `walk.at`: the range to read, or `None` once the
    /// state has moved on.
    pub(super) fn tar_storages(&mut self, left: TarLeft, mut walk: StorageWalk) -> Option<ByteRange> {
        let range = ByteRange::new(walk.at, walk.at.saturating_add(walk.window).min(walk.member.end));
        let Some(b) = self.got(range) else {
            self.state = State::TarStorages(left, walk);
            return Some(range);
        };
        let mut pos = 0usize;
        loop {
            let at = range.start + pos as u64;
            let tree = machine::run(&b[pos..], at);
            let record = walk.left.is_some_and(|n| n > 0);
            // A storage record is followed by its element count, read from the same bytes.
            let short = tree.truncated || (record && tree.end.is_some_and(|e| e.saturating_add(8) > range.end));
            if short {
                if range.end < walk.member.end && walk.window < MAX_PICKLE_BYTES {
                    if pos == 0 {
                        walk.window = walk.window.saturating_mul(4);
                    }
                    walk.at = at;
                    self.state = State::TarStorages(left, walk);
                } else {
                    self.tar_record_error(left, format!("the storages member ends inside its record at byte {at}"));
                }
                return None;
            }
            self.side_imports.extend(owned_globals(&tree));
            let end = match (&tree.stopped, tree.end) {
                (None, Some(end)) => end,
                (Some(s), _) => {
                    return self
                        .tar_record_error(left, format!("its record at byte {at} stops at byte {}: {}", s.at, s.why))
                }
                (None, None) => return self.tar_record_error(left, format!("its record at byte {at} has no end")),
            };
            match walk.left {
                None => {
                    let Some(count) = tree.root.and_then(|r| tree.int(r)).and_then(|n| u64::try_from(n).ok()) else {
                        return self.tar_record_error(left, "it does not start with a count of storages".into());
                    };
                    walk.left = Some(count);
                    pos = (end - range.start) as usize;
                }
                Some(0) => {
                    self.tar_views(&tree);
                    self.tar_next(left);
                    return None;
                }
                Some(n) => {
                    let Some((key, location, type_name)) = tar_records::storage(&tree) else {
                        return self
                            .tar_record_error(left, format!("its record at byte {at} is not (key, location, type)"));
                    };
                    let Some(width) = torch::storage_width(&type_name) else {
                        let msg = format!(
                            "storage {key} is a {type_name}, whose element size is not known, so the records after \
                             it cannot be found"
                        );
                        return self.tar_record_error(left, msg);
                    };
                    let from = (end - range.start) as usize;
                    let numel = i64::from_le_bytes(b[from..from + 8].try_into().expect("8 bytes"));
                    let start = end + 8;
                    let data_end = u64::try_from(numel)
                        .ok()
                        .and_then(|n| n.checked_mul(width))
                        .and_then(|len| start.checked_add(len))
                        .filter(|&e| e <= walk.member.end);
                    let Some(data_end) = data_end else {
                        self.out.findings.push(Finding::new(
                            rules::STORAGE_TOO_SMALL,
                            format!("storage {key} declares {numel} elements, past the end of the storages member"),
                        ));
                        self.tar_next(left);
                        return None;
                    };
                    self.out.storages.insert(key.clone(), Located { start, len: data_end - start });
                    let dtype = torch::storage_dtype(&type_name);
                    let numel = u64::try_from(numel).ok();
                    self.tar_storages
                        .insert(key.clone(), torch::Storage { key, dtype, type_name, numel, location, inline: None });
                    walk.left = Some(n - 1);
                    if data_end < range.end {
                        pos = (data_end - range.start) as usize;
                    } else {
                        walk.at = data_end;
                        walk.window = FIRST_RECORD_WINDOW;
                        self.state = State::TarStorages(left, walk);
                        return None;
                    }
                }
            }
        }
    }

    /// The `storages` member cannot be read on from here (`why`): the other members still are.
    fn tar_record_error(&mut self, left: TarLeft, why: String) -> Option<ByteRange> {
        self.out.findings.push(Finding::new(
            rules::BAD_TAR,
            format!("the tar's storages member: {why}; the storages after it are not found, nor their records judged"),
        ));
        self.tar_next(left);
        None
    }

    /// The storage views the last `storages` pickle lists, each a slice of its root's bytes.
    fn tar_views(&mut self, tree: &machine::Tree) {
        let Some(views) = tar_records::views(tree) else {
            self.out.findings.push(Finding::new(rules::BAD_TAR_MINOR, "the storage views are not a list of views"));
            return;
        };
        for (key, root, offset, numel) in views {
            let Some(base) = self.tar_storages.get(&root).cloned() else { continue };
            let Some(&bytes) = self.out.storages.get(&root) else { continue };
            let width = torch::storage_width(&base.type_name).unwrap_or(1);
            let span = offset.checked_mul(width).zip(numel.checked_mul(width));
            let Some((from, len)) = span.filter(|&(f, l)| f.checked_add(l).is_some_and(|e| e <= bytes.len)) else {
                self.out.findings.push(Finding::new(
                    rules::STORAGE_TOO_SMALL,
                    format!("storage view {key} runs past the end of storage {root}"),
                ));
                continue;
            };
            self.out.storages.insert(key.clone(), Located { start: bytes.start + from, len });
            self.tar_storages.insert(key.clone(), torch::Storage { key, numel: Some(numel), ..base });
        }
    }

    /// The `tensors` member's records, whose bytes are `b` (the first at absolute `base`).
    pub(super) fn tar_tensor_records(&mut self, b: &[u8], base: u64) {
        let fail = |me: &mut Self, why: String| {
            me.out.findings.push(Finding::new(
                rules::BAD_TAR,
                format!("the tar's tensors member: {why}; the tensors after it are not listed"),
            ));
        };
        let mut pos = 0usize;
        let mut count: Option<u64> = None;
        loop {
            if count == Some(0) {
                return;
            }
            let at = base + pos as u64;
            let tree = machine::run(&b[pos..], at);
            self.side_imports.extend(owned_globals(&tree));
            let Some(end) = tree.end.filter(|_| tree.stopped.is_none() && !tree.truncated) else {
                return fail(self, format!("its record at byte {at} cannot be read"));
            };
            pos = (end - base) as usize;
            let Some(n) = count else {
                match tree.root.and_then(|r| tree.int(r)).and_then(|n| u64::try_from(n).ok()) {
                    Some(n) => count = Some(n.min(torch::MAX_TENSORS as u64)),
                    None => return fail(self, "it does not start with a count of tensors".into()),
                }
                continue;
            };
            let Some((key, storage_key)) = tar_records::tensor(&tree) else {
                return fail(self, format!("its record at byte {at} is not (key, storage, type)"));
            };
            let layout = match tar_records::layout(&b[pos..]) {
                Ok(l) => l,
                Err(why) => return fail(self, format!("tensor {key} at byte {at}: {why}")),
            };
            pos += layout.len;
            let storage = match self.tar_storages.get(&storage_key) {
                Some(s) => s.clone(),
                None => {
                    self.out.findings.push(Finding::new(
                        rules::MISSING_STORAGE,
                        format!("tensor {key} views storage {storage_key}, which the storages member does not hold"),
                    ));
                    torch::Storage {
                        key: storage_key,
                        dtype: None,
                        type_name: "?".into(),
                        numel: None,
                        location: "?".into(),
                        inline: None,
                    }
                }
            };
            let tensor = torch::PickledTensor {
                name: String::new(),
                storage,
                storage_offset: layout.storage_offset,
                shape: layout.shape,
                strides: layout.strides,
            };
            self.tar_tensors.insert(key, tensor);
            count = Some(n - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tar::tests::block;
    use super::super::{Container, PickleDecoder, PickleRead};
    use crate::range::ByteRange;

    /// `posix.system("true")`, pickled.
    const EVIL: &[u8] = b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00true\x85R.";
    /// `0`, `[]` and `{}`, pickled.
    const ZERO: &[u8] = b"\x80\x02K\x00.";
    const EMPTY_LIST: &[u8] = b"\x80\x02].";
    const EMPTY_DICT: &[u8] = b"\x80\x02}.";

    /// A tar member: header `flag`, then `data` padded to whole blocks.
    fn member(name: &[u8], flag: u8, data: &[u8]) -> Vec<u8> {
        let mut out = block(name, flag, data.len() as u64);
        out.extend(data);
        out.resize(out.len().next_multiple_of(512), 0);
        out
    }

    /// The members torch needs, holding no tensors, the object pickle being `pickle`.
    fn archive(pickle: &[u8]) -> Vec<u8> {
        [
            member(b"storages", b'0', &[ZERO, EMPTY_LIST].concat()),
            member(b"tensors", b'0', ZERO),
            member(b"pickle", b'0', pickle),
        ]
        .concat()
    }

    fn read(bytes: &[u8]) -> PickleRead {
        let d = PickleDecoder::new(bytes.len() as u64, false);
        let slice = |r: ByteRange| Ok::<_, ()>(bytes[r.start as usize..(r.end as usize).min(bytes.len())].to_vec());
        crate::step::drive(d, 1 << 20, slice).unwrap()
    }

    fn dangerous(r: &PickleRead) -> bool {
        r.imports.iter().any(|i| i.module == "posix" && i.name == "system")
    }

    fn end(mut b: Vec<u8>) -> Vec<u8> {
        b.extend([0u8; 1024]);
        b
    }

    #[test]
    fn members_are_named_as_tarfile_names_them_and_the_last_is_read() {
        let harmless = archive(EMPTY_DICT);
        assert!(!dangerous(&read(&end(harmless.clone()))));
        assert_eq!(read(&end(harmless.clone())).container, Container::TorchTar);
        // A PAX path, a GNU long name and a global PAX path each make a later member the
        // pickle torch reads.
        let pax = member(b"PaxHeaders/x", b'x', b"15 path=pickle\n");
        let long = member(b"././@LongLink", b'L', b"pickle\0");
        let global = member(b"global", b'g', b"15 path=pickle\n");
        for renamer in [pax, long, global] {
            let r = read(&end([harmless.clone(), renamer, member(b"decoy", b'0', EVIL)].concat()));
            assert!(dangerous(&r), "{:?}", r.findings);
            assert!(r.findings.is_empty(), "{:?}", r.findings);
        }
        // Without a renamer, a decoy after the pickle is not what torch reads (nor judged).
        assert!(!dangerous(&read(&end([harmless.clone(), member(b"decoy", b'0', EVIL)].concat()))));
        // The members end at the first block that is no header: what follows is not a member.
        let mut after_end = end(harmless.clone());
        after_end.extend(member(b"pickle", b'0', EVIL));
        assert!(!dangerous(&read(&after_end)));
        // A PAX size sizes the member: the next header is found after that many bytes.
        let sized = [
            member(b"x", b'x', b"13 size=1024\n"),
            block(b"storages", b'0', 0),
            [ZERO, EMPTY_LIST, &[b'.'; 1024 - ZERO.len() - EMPTY_LIST.len()]].concat(),
            archive(EVIL)[1024..].to_vec(),
        ];
        let r = read(&end(sized.concat()));
        assert!(dangerous(&r) && r.findings.is_empty(), "{:?}", r.findings);
    }

    #[test]
    fn a_tar_tarfile_gives_up_on_is_read_as_torch_then_reads_it() {
        // An extension header with no member after it: tarfile raises, torch reads the file
        // as the legacy format (here: not a pickle at all).
        let r = read(&end([archive(EVIL), member(b"x", b'x', b"15 path=pickle\n")].concat()));
        assert_eq!(r.container, Container::Plain, "{:?}", r.findings);
        assert!(r.findings.iter().any(|f| f.breaks(super::rules::BAD_TAR)), "{:?}", r.findings);
        assert!(!dangerous(&r));
        // Missing members are errors; what is there is still judged.
        let r = read(&end(member(b"pickle", b'0', EVIL)));
        assert!(dangerous(&r));
        let said: Vec<&str> = r.findings.iter().map(|f| f.message.as_str()).collect();
        assert!(said.iter().any(|m| m.contains("no member named storages")), "{said:?}");
        // A storage record naming code is judged like the object pickle.
        let record = b"\x80\x02(K\x01cposix\nsystem\ncposix\nsystem\ntq\x00.";
        let storages = [b"\x80\x02K\x01.".as_slice(), record, &0i64.to_le_bytes(), EMPTY_LIST].concat();
        let r = read(&end([member(b"storages", b'0', &storages), member(b"pickle", b'0', EMPTY_DICT)].concat()));
        assert!(dangerous(&r), "{:?}", r.imports);
    }

    #[test]
    fn claims_past_the_member_end_in_findings_and_every_cut_parses() {
        // One FloatStorage record claiming 2^40 elements in a 100-byte member.
        let record = b"\x80\x02K\x01X\x03\x00\x00\x00cpuctorch\nFloatStorage\n\x87.";
        let mut storages = [b"\x80\x02K\x01.".as_slice(), record].concat();
        storages.extend((1i64 << 40).to_le_bytes());
        let r = read(&end([member(b"storages", b'0', &storages), member(b"pickle", b'0', EMPTY_DICT)].concat()));
        assert!(r.findings.iter().any(|f| f.breaks(super::rules::STORAGE_TOO_SMALL)), "{:?}", r.findings);
        assert!(r.storages.is_empty());
        // Every cut of a whole archive ends in a result, never a panic or a hang.
        let whole = end(archive(EVIL));
        for cut in (0..whole.len()).step_by(7) {
            let r = read(&whole[..cut]);
            if cut >= 5 * 512 + EVIL.len() {
                assert!(dangerous(&r), "cut at {cut}");
            }
        }
    }
}
