//! The tar archives `torch.save` wrote before torch 0.4 (members `sys_info`, `pickle`,
//! `tensors` and `storages`), read as Python's `tarfile` reads them, since that is what decides
//! which bytes `torch.load` unpickles:
//! - a block is a header when it is not all zeros and its checksum holds (the unsigned or the
//!   signed sum of its bytes, the checksum field counted as spaces), whatever its magic says;
//! - a ustar prefix, a GNU long name (`L`) and a PAX `path` record (`x` for the next member,
//!   `g` for every later one) name a member; a PAX `size` record sizes it;
//! - the members end at the first block that is not a header; the last member of a name is the
//!   one extracted.

/// Bytes per tar block (a header, and the unit member data is padded to).
pub const BLOCK: u64 = 512;
/// Longest PAX or GNU long-name data read (a path record is a few hundred bytes).
pub const MAX_EXTENDED: u64 = 64 << 10;

/// One header block, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The name, prefix included (bytes: Python compares its surrogate-escaped text, which is
    /// the same).
    pub name: Vec<u8>,
    pub kind: Kind,
    /// The size the header gives.
    pub size: u64,
}

/// What a header introduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (`0`, NUL, `7`): its data follows.
    File,
    /// PAX records for the next member (`x`, `X`) or for every later one (`g`).
    Pax { global: bool },
    /// A GNU long name (`L`) or long link name (`K`) for the next member.
    GnuLong { name: bool },
    /// Directories, links and devices: no data follows, whatever the size says.
    NoData,
    /// A type `tarfile` does not know: its data is stepped over.
    Other,
}

impl Kind {
    fn of(flag: u8, name: &[u8]) -> Kind {
        match flag {
            // A regular file whose name ends in '/' is a directory (old V7 archives).
            0 if name.ends_with(b"/") => Kind::NoData,
            b'0' | 0 | b'7' => Kind::File,
            // A GNU sparse file: its data layout is not followed, but its blocks are stepped over.
            b'S' => Kind::Other,
            b'x' | b'X' => Kind::Pax { global: false },
            b'g' => Kind::Pax { global: true },
            b'L' => Kind::GnuLong { name: true },
            b'K' => Kind::GnuLong { name: false },
            b'1'..=b'6' => Kind::NoData,
            _ => Kind::Other,
        }
    }

    /// Whether data blocks follow the header.
    pub fn has_data(self) -> bool {
        !matches!(self, Kind::NoData)
    }
}

/// The bytes of `field` up to its first NUL.
fn text(field: &[u8]) -> &[u8] {
    field.iter().position(|&b| b == 0).map_or(field, |n| &field[..n])
}

/// A numeric field as Python's `tarfile.nti` reads it: base-256 when its first byte is 0x80 or
/// 0xff, else octal text (spaces around it, a sign, `_` between digits), empty meaning 0.
/// `None` where `tarfile` calls the header invalid.
pub fn number(field: &[u8]) -> Option<i128> {
    match field.first() {
        Some(&(0x80 | 0xff)) => {
            let mut n: i128 = 0;
            for &b in &field[1..] {
                n = (n << 8) | i128::from(b);
            }
            if field[0] == 0xff {
                n -= 1i128 << (8 * (field.len() - 1));
            }
            Some(n)
        }
        _ => python_int(std::str::from_utf8(text(field)).ok().filter(|s| s.is_ascii())?, 8),
    }
}

/// Python's `int(s, radix)` for ASCII `s` (surrounding whitespace, a sign, single `_` between
/// digits); an all-blank `s` is 0, as `int(s.strip() or "0")` makes it.
pub fn python_int(s: &str, radix: u32) -> Option<i128> {
    let blank = |c: char| c.is_ascii_whitespace() || ('\x1c'..='\x1f').contains(&c) || c == '\x0b';
    let s = s.trim_matches(blank);
    if s.is_empty() {
        return Some(0);
    }
    let (negative, digits) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let mut n: i128 = 0;
    for c in digits.chars().filter(|&c| c != '_') {
        n = n.checked_mul(i128::from(radix))?.checked_add(i128::from(c.to_digit(radix)?))?;
    }
    Some(if negative { -n } else { n })
}

/// Whether `b` (one block) is a header `tarfile` accepts: not all zeros, every numeric field
/// readable, its checksum right.
pub fn is_header(b: &[u8]) -> bool {
    header(b).is_some()
}

/// The header in block `b`, or `None` where `tarfile` finds none (the archive ends there).
pub fn header(b: &[u8]) -> Option<Header> {
    let b = b.get(..BLOCK as usize)?;
    if b.iter().all(|&x| x == 0) {
        return None;
    }
    let sum = number(&b[148..156])?;
    let (mut unsigned, mut signed) = (256i128, 256i128);
    for (i, &x) in b.iter().enumerate() {
        if !(148..156).contains(&i) {
            unsigned += i128::from(x);
            signed += i128::from(x as i8);
        }
    }
    if sum != unsigned && sum != signed {
        return None;
    }
    // mode, uid, gid, size, mtime, devmajor, devminor: tarfile reads them all.
    let fields = [100..108, 108..116, 116..124, 124..136, 136..148, 329..337, 337..345];
    for f in fields.clone() {
        number(&b[f])?;
    }
    let size = u64::try_from(number(&b[124..136])?).ok()?;
    let mut name = text(&b[..100]).to_vec();
    let kind = Kind::of(b[156], &name);
    let prefix = text(&b[345..500]);
    if kind == Kind::NoData {
        while name.last() == Some(&b'/') {
            name.pop();
        }
    }
    if !prefix.is_empty() && !matches!(kind, Kind::GnuLong { .. }) && b[156] != b'S' {
        name = [prefix, b"/", &name].concat();
    }
    Some(Header { name, kind, size })
}

/// Data blocks of `size` bytes: the size rounded up to whole blocks.
pub fn padded(size: u64) -> Option<u64> {
    size.checked_add(BLOCK - 1).map(|s| s / BLOCK * BLOCK)
}

/// What a PAX header's records set: `path` and `size` (`None` where not given; a size Python
/// cannot read counts as 0, as it does).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pax {
    pub path: Option<Vec<u8>>,
    pub size: Option<u64>,
}

impl Pax {
    /// Read `len key=value\n` records (each `len` counting the whole record) until one does not
    /// parse, as `tarfile` does; `None` for a record of length 0, which it calls invalid.
    pub fn read(data: &[u8], into: &mut Pax) -> Option<()> {
        let mut pos = 0usize;
        loop {
            let rest = &data[pos.min(data.len())..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || rest.get(digits) != Some(&b' ') {
                return Some(());
            }
            let key_start = digits + 1;
            let Some(eq) = rest[key_start..].iter().position(|&b| b == b'=') else { return Some(()) };
            if eq == 0 {
                return Some(());
            }
            let len: usize = std::str::from_utf8(&rest[..digits]).ok()?.parse().unwrap_or(usize::MAX);
            if len == 0 {
                return None;
            }
            let value_start = key_start + eq + 1;
            // The value runs to the record's end, less its newline.
            let value = rest.get(value_start..len.saturating_sub(1).max(value_start).min(rest.len())).unwrap_or(&[]);
            match &rest[key_start..key_start + eq] {
                b"path" => {
                    let mut v = value.to_vec();
                    while v.last() == Some(&b'/') {
                        v.pop();
                    }
                    into.path = Some(v);
                }
                b"size" => {
                    let v = std::str::from_utf8(value).ok().and_then(|s| python_int(s, 10));
                    into.size = Some(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0));
                }
                _ => {}
            }
            pos = pos.saturating_add(len);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ustar header for `name`, of type `flag` and `size` bytes, with a right checksum.
    pub(crate) fn block(name: &[u8], flag: u8, size: u64) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        b[..name.len()].copy_from_slice(name);
        b[100..107].copy_from_slice(b"0000644");
        b[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
        b[136..147].copy_from_slice(b"00000000000");
        b[156] = flag;
        b[257..263].copy_from_slice(b"ustar\0");
        b[263..265].copy_from_slice(b"00");
        b[148..156].copy_from_slice(b"        ");
        let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
        b[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        b
    }

    #[test]
    fn headers_are_known_by_their_checksum_alone() {
        let b = block(b"pickle", b'0', 700);
        assert_eq!(header(&b), Some(Header { name: b"pickle".to_vec(), kind: Kind::File, size: 700 }));
        // No magic at all (a V7 archive): still a header, once the checksum is made right again.
        let mut v7 = b.clone();
        v7[257..265].fill(0);
        assert!(header(&v7).is_none());
        let sum: u32 =
            v7.iter().enumerate().map(|(i, &x)| if (148..156).contains(&i) { 32 } else { u32::from(x) }).sum();
        v7[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        assert!(is_header(&v7));
        // One byte changed: no header; all zeros: the end.
        let mut bad = b.clone();
        bad[3] ^= 1;
        assert!(!is_header(&bad));
        assert!(!is_header(&[0u8; 512]));
        assert!(!is_header(&b[..511]));
        // A numeric field tarfile cannot read makes the block no header.
        let mut mode = b.clone();
        mode[100] = b'9';
        let fixed: u32 =
            mode.iter().enumerate().map(|(i, &x)| if (148..156).contains(&i) { 32 } else { u32::from(x) }).sum();
        mode[148..156].copy_from_slice(format!("{fixed:06o}\0 ").as_bytes());
        assert!(!is_header(&mode));
    }

    #[test]
    fn numbers_read_as_python_reads_them() {
        assert_eq!(number(b"0000644\0"), Some(0o644));
        assert_eq!(number(b"  17 \0\0\0"), Some(0o17));
        assert_eq!(number(b"\0\0\0\0"), Some(0));
        assert_eq!(number(b"1_7\0"), Some(0o17));
        assert_eq!(number(b"-7\0"), Some(-7));
        assert_eq!(number(b"1__7"), None);
        assert_eq!(number(b"8"), None);
        assert_eq!(number(b"\x80\0\0\0\0\0\0\x01\0\0\0\0"), Some(1 << 32));
        assert_eq!(number(b"\xff\xff"), Some(-1));
        assert_eq!(python_int(" 1_000\n", 10), Some(1000));
    }

    #[test]
    fn names_take_their_prefix_and_directories_lose_their_slash() {
        let mut b = block(b"pickle", b'0', 1);
        b[345..348].copy_from_slice(b"dir");
        b[148..156].copy_from_slice(b"        ");
        let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
        b[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        assert_eq!(header(&b).unwrap().name, b"dir/pickle");
        let d = header(&block(b"pickle/", 0, 0)).unwrap();
        assert_eq!((d.name.as_slice(), d.kind), (&b"pickle"[..], Kind::NoData));
        assert_eq!(header(&block(b"x", b'2', 9)).unwrap().kind, Kind::NoData);
        assert_eq!(header(&block(b"x", b'Z', 9)).unwrap().kind, Kind::Other);
    }

    #[test]
    fn pax_records_set_path_and_size() {
        let mut p = Pax::default();
        assert_eq!(Pax::read(b"15 path=pickle\n13 size=1234\n13 mtime=1.5\n", &mut p), Some(()));
        assert_eq!(p, Pax { path: Some(b"pickle".to_vec()), size: Some(1234) });
        let mut p = Pax::default();
        Pax::read(b"13 size=zz12\n", &mut p);
        assert_eq!(p.size, Some(0));
        assert_eq!(Pax::read(b"0 path=x\n", &mut Pax::default()), None);
        // Records stop at the first that does not parse.
        let mut p = Pax::default();
        Pax::read(b"junk 15 path=pickle\n", &mut p);
        assert_eq!(p.path, None);
        assert_eq!(padded(0), Some(0));
        assert_eq!(padded(1), Some(512));
        assert_eq!(padded(u64::MAX), None);
    }
}
