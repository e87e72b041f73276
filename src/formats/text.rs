//! Text helpers every layer uses: a path's file name, and the search match of names.

/// The file name of a path (`/` or `\` separated).
pub fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The folder part of a path, with its trailing separator (empty for a bare name).
pub fn folder(path: &str) -> &str {
    &path[..path.len() - base_name(path).len()]
}

/// Whether `name` matches `pattern`: a glob when it holds `*` or `?` (matched against the whole
/// name), a case-insensitive substring otherwise. An empty pattern matches everything.
pub fn matches(pattern: &str, name: &str) -> bool {
    if pattern.contains(['*', '?']) {
        glob(pattern.as_bytes(), name.as_bytes())
    } else if pattern.is_ascii() {
        // No allocation per name: this runs for every tensor on every keystroke.
        let p = pattern.as_bytes();
        p.is_empty() || name.as_bytes().windows(p.len()).any(|w| w.eq_ignore_ascii_case(p))
    } else {
        name.to_lowercase().contains(&pattern.to_lowercase())
    }
}

/// `*` matches any run (dots included), `?` any one byte; iterative, so no pattern is slow.
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}
