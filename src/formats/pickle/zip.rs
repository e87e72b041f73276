//! The zip container torch.save writes: the end-of-central-directory record read from the end of
//! the file (ZIP64 past 4 GiB or 65,535 entries), the central directory, and the local header
//! that says where an entry's stored bytes begin. Parsing only; the decoder does the reads.

/// Bytes at the end of a file that hold the end record and its longest comment.
pub const TAIL_BYTES: u64 = 22 + 65_535;
/// Largest central directory read (a million entries of 64-byte names is about 110 MB; torch's
/// have one per storage).
pub const MAX_DIRECTORY_BYTES: u64 = 64 << 20;

/// Where the central directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    /// Offset of the end record in the file.
    pub at: u64,
    pub entries: u64,
    pub dir_offset: u64,
    pub dir_size: u64,
    /// Whether some field is saturated, so the ZIP64 record holds the real values.
    pub zip64: bool,
}

/// One central-directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    /// 0 stored, 8 deflated.
    pub method: u16,
    pub compressed: u64,
    pub size: u64,
    /// Offset of its local header.
    pub local: u64,
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// The end record in `tail`, the file's last bytes starting at offset `tail_start`: the last
/// signature whose comment length reaches exactly the end of the file.
pub fn find_end(tail: &[u8], tail_start: u64) -> Option<End> {
    let mut i = tail.len().checked_sub(22)?;
    loop {
        if tail[i..].starts_with(b"PK\x05\x06") {
            let comment = u16_at(tail, i + 20)? as usize;
            if i + 22 + comment == tail.len() {
                let entries = u16_at(tail, i + 10)?;
                let dir_size = u32_at(tail, i + 12)?;
                let dir_offset = u32_at(tail, i + 16)?;
                return Some(End {
                    at: tail_start + i as u64,
                    entries: entries.into(),
                    dir_offset: dir_offset.into(),
                    dir_size: dir_size.into(),
                    zip64: entries == u16::MAX || dir_size == u32::MAX || dir_offset == u32::MAX,
                });
            }
        }
        i = i.checked_sub(1)?;
    }
}

/// The ZIP64 end record's offset, from the locator (the 20 bytes before the end record).
pub fn zip64_locator(b: &[u8]) -> Option<u64> {
    if !b.starts_with(b"PK\x06\x07") {
        return None;
    }
    u64_at(b, 8)
}

/// The ZIP64 end record (56 bytes at the locator's offset) laid over `end`.
pub fn zip64_end(b: &[u8], end: End) -> Option<End> {
    if !b.starts_with(b"PK\x06\x06") {
        return None;
    }
    Some(End { entries: u64_at(b, 32)?, dir_size: u64_at(b, 40)?, dir_offset: u64_at(b, 48)?, ..end })
}

/// The entries of a central directory, or why it does not parse.
pub fn entries(dir: &[u8], count: u64) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < dir.len() && (out.len() as u64) < count {
        if !dir[i..].starts_with(b"PK\x01\x02") {
            return Err(format!("central directory entry {} has no signature", out.len()));
        }
        let short = || format!("central directory entry {} is cut short", out.len());
        let method = u16_at(dir, i + 10).ok_or_else(short)?;
        let mut compressed = u64::from(u32_at(dir, i + 20).ok_or_else(short)?);
        let mut size = u64::from(u32_at(dir, i + 24).ok_or_else(short)?);
        let name_len = usize::from(u16_at(dir, i + 28).ok_or_else(short)?);
        let extra_len = usize::from(u16_at(dir, i + 30).ok_or_else(short)?);
        let comment_len = usize::from(u16_at(dir, i + 32).ok_or_else(short)?);
        let mut local = u64::from(u32_at(dir, i + 42).ok_or_else(short)?);
        let name = dir.get(i + 46..i + 46 + name_len).ok_or_else(short)?;
        let extra = dir.get(i + 46 + name_len..i + 46 + name_len + extra_len).ok_or_else(short)?;
        // The ZIP64 extended field holds, in order, the saturated ones among size, compressed, local.
        let mut e = 0;
        while e + 4 <= extra.len() {
            let id = u16_at(extra, e).unwrap_or(0);
            let len = usize::from(u16_at(extra, e + 2).unwrap_or(0));
            if id == 1 {
                let mut f = e + 4;
                for v in [&mut size, &mut compressed, &mut local] {
                    if *v == u64::from(u32::MAX) {
                        *v = u64_at(extra, f).ok_or_else(short)?;
                        f += 8;
                    }
                }
            }
            e += 4 + len;
        }
        out.push(Entry { name: String::from_utf8_lossy(name).into_owned(), method, compressed, size, local });
        i += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// Where an entry's bytes begin, from the 30 bytes of its local header at offset `local`.
pub fn data_start(header: &[u8], local: u64) -> Option<u64> {
    if !header.starts_with(b"PK\x03\x04") {
        return None;
    }
    let n = u64::from(u16_at(header, 26)?);
    let e = u64::from(u16_at(header, 28)?);
    local.checked_add(30)?.checked_add(n)?.checked_add(e)
}
