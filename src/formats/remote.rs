//! Reading checkpoints over HTTP, platform-free: URL shorthands, resolving shard names against
//! an index URL, and judging a response to a `Range` request.

use std::fmt;

/// The Hub's `resolve` URL for `hf://owner/repo[@revision]/path` (revision `main` by default);
/// any other URL is returned unchanged.
pub fn expand_url(url: &str) -> String {
    let Some(rest) = url.strip_prefix("hf://") else {
        return url.to_owned();
    };
    let mut parts = rest.splitn(3, '/');
    let (owner, repo_rev, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (repo, rev) = repo_rev.split_once('@').unwrap_or((repo_rev, "main"));
    format!("https://huggingface.co/{owner}/{repo}/resolve/{rev}/{path}")
}

/// Why a URL is not opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlError(pub String);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not an http:, https: or hf:// URL; only those are opened", self.0)
    }
}

/// The scheme of an absolute URL (`scheme:` as RFC 3986 spells it), lowercased.
fn scheme(url: &str) -> Option<String> {
    let (s, _) = url.split_once(':')?;
    let mut chars = s.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    ok.then(|| s.to_ascii_lowercase())
}

/// `url` (after `hf://` expansion) when it is an `http:` or `https:` URL with a host; anything
/// else (`javascript:`, `file:`, `data:`, `blob:`, a bare path) is refused.
pub fn check_url(url: &str) -> Result<String, UrlError> {
    let u = expand_url(url.trim());
    let host_ok = |rest: &str| rest.strip_prefix("//").is_some_and(|r| !r.is_empty() && !r.starts_with('/'));
    match scheme(&u).as_deref() {
        Some("http" | "https") if host_ok(&u[u.find(':').unwrap_or(0) + 1..]) => Ok(u),
        _ => Err(UrlError(url.to_owned())),
    }
}

/// The URL of the file `name` beside the file at URL `base` (a shard an index names, in the
/// index's folder or below it). A name that would leave that folder (a scheme, a host, a path
/// from the root, a `..` part, a query) is refused: a hostile index could otherwise send the
/// page's requests anywhere, or build a model of another repository's files.
pub fn beside(base: &str, name: &str) -> Result<String, ShardNameError> {
    let bad = || ShardNameError(name.to_owned());
    let parts_ok = name.split('/').all(|p| !p.is_empty() && p != "." && p != "..");
    if name.is_empty() || scheme(name).is_some() || !parts_ok || name.contains(['\\', '?', '#', '%']) {
        return Err(bad());
    }
    let path_end = base.find(['?', '#']).unwrap_or(base.len());
    let dir = base[..path_end].rfind('/').map_or("", |i| &base[..=i]);
    Ok(format!("{dir}{name}"))
}

/// `url` (a Hub `…/resolve/<revision>/…` URL) at `commit` instead of its revision, so that the
/// files beside it are read at the commit the index was read at, not wherever the branch has
/// moved since. `None` when `commit` is not a full commit hash or `url` resolves no revision.
pub fn at_commit(url: &str, commit: &str) -> Option<String> {
    if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let at = url.find("/resolve/")? + "/resolve/".len();
    let rev_end = at + url[at..].find('/')?;
    Some(format!("{}{}{}", &url[..at], commit.to_ascii_lowercase(), &url[rev_end..]))
}

/// A shard name an index gives that is not a file beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardNameError(pub String);

impl fmt::Display for ShardNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the index names shard '{}', which is not a file in the index's folder; none is fetched", self.0)
    }
}

/// The file name at the end of a URL's path.
pub fn url_file_name(url: &str) -> &str {
    let path_end = url.find(['?', '#']).unwrap_or(url.len());
    url[..path_end].rsplit('/').next().unwrap_or(url)
}

/// What was learned of a remote file at first contact, compared with every later response so
/// that a file replaced on the server is an error, never a mix of two files' bytes. (Not sent
/// as `If-Range`: that header is not CORS-safelisted, so each read would cost a preflight round
/// trip, and the response's own size and validators tell the same.)
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pin {
    /// The URL after redirects: later reads go there directly.
    pub url: String,
    pub total: u64,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// Stable codes of what reading remote files shows.
pub mod rules {
    use crate::findings::Rule;

    pub const UNPINNED: Rule = Rule::info("remote.unpinned");
    /// A shard an index names could not be read (not found, refused, or broken off).
    pub const UNREADABLE_SHARD: Rule = Rule::error("remote.unreadable_shard");
}

/// The finding on shard `name` of a remote set, which could not be read (`error` says why): it
/// is left out, and the set opens without it.
pub fn unreadable_shard(name: &str, error: &str) -> crate::findings::Finding {
    crate::findings::Finding::new(
        rules::UNREADABLE_SHARD,
        format!("shard {name} could not be read ({error}); the tensors the index places in it are missing"),
    )
}

impl Pin {
    /// A finding when the server shows no validator (ETag or Last-Modified) for the file: only
    /// its size then tells a replaced file from the one opened.
    pub fn unpinned(&self) -> Option<crate::findings::Finding> {
        (self.etag.is_none() && self.last_modified.is_none()).then(|| {
            crate::findings::Finding::new(
                rules::UNPINNED,
                format!(
                    "{}: the server shows no ETag or Last-Modified (to this page), so a file replaced on it by \
                     one of the same size would not be noticed while it is open",
                    self.url
                ),
            )
        })
    }
}

/// The headers of a response that matter to range reading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeHeaders<'a> {
    pub content_range: Option<&'a str>,
    pub etag: Option<&'a str>,
    pub last_modified: Option<&'a str>,
}

/// Why a response to a `Range` request cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeError {
    /// The file is not the one first read: its size or validator changed.
    Changed(String),
    /// `200 OK`: the server sends the whole file; it does not support range requests.
    RangeIgnored,
    /// Any status but 206 (and 200).
    Status(u16),
    /// 206 without a usable `Content-Range` (or one that is not what was asked).
    BadContentRange(String),
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RangeError::RangeIgnored => write!(
                f,
                "the server answered with the whole file (200) instead of the requested range: it does not \
                 support range requests, so the file cannot be read in parts"
            ),
            RangeError::Status(s) => write!(f, "the server answered HTTP {s}"),
            RangeError::BadContentRange(h) => write!(f, "the server's Content-Range '{h}' does not match the request"),
            RangeError::Changed(what) => write!(
                f,
                "the file changed on the server since it was opened ({what}); reopen it to read the new version"
            ),
        }
    }
}

/// `(start, end_inclusive, total)` of a `Content-Range: bytes a-b/total` header.
pub fn parse_content_range(header: &str) -> Option<(u64, u64, u64)> {
    let rest = header.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (a, b) = range.split_once('-')?;
    let (a, b, total) = (a.trim().parse().ok()?, b.trim().parse().ok()?, total.trim().parse().ok()?);
    (a <= b && b < total).then_some((a, b, total))
}

/// Judge a response to `Range: bytes=start-end_inclusive` (against `pin`, the file as first
/// read, when given): the file's total size, or why the bytes cannot be used.
pub fn check_range_response(
    status: u16,
    headers: &RangeHeaders<'_>,
    start: u64,
    end_inclusive: u64,
    pin: Option<&Pin>,
) -> Result<u64, RangeError> {
    match (status, pin) {
        (206, _) => {}
        // The server honoured Range at first contact.
        (200, Some(_)) => {
            return Err(RangeError::Changed("the server now sends the whole file where it sent ranges".into()))
        }
        (200, None) => return Err(RangeError::RangeIgnored),
        (s, _) => return Err(RangeError::Status(s)),
    }
    let header = headers.content_range.unwrap_or("");
    let total = match parse_content_range(header) {
        Some((a, b, total)) if a == start && (b == end_inclusive || (b < end_inclusive && b + 1 == total)) => total,
        _ => return Err(RangeError::BadContentRange(header.to_owned())),
    };
    if let Some(p) = pin {
        if total != p.total {
            return Err(RangeError::Changed(format!("its size was {} bytes and is now {total}", p.total)));
        }
        // The ETag when both have one, else the date (a response without the ETag it had).
        match (&p.etag, headers.etag) {
            (Some(was), Some(now)) if was != now => {
                return Err(RangeError::Changed(format!("its ETag was {was} and is now {now}")))
            }
            (Some(_), Some(_)) => {}
            _ => {
                if let (Some(was), Some(now)) = (&p.last_modified, headers.last_modified) {
                    if was != now {
                        return Err(RangeError::Changed(format!("it was last modified {was} and now {now}")));
                    }
                }
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_shorthand_and_relative_shards() {
        assert_eq!(
            expand_url("hf://Qwen/Qwen2-7B@v1.0/model.safetensors.index.json"),
            "https://huggingface.co/Qwen/Qwen2-7B/resolve/v1.0/model.safetensors.index.json"
        );
        assert_eq!(expand_url("hf://a/b/c/d.gguf"), "https://huggingface.co/a/b/resolve/main/c/d.gguf");
        assert_eq!(expand_url("http://x/y"), "http://x/y");
        let idx = "https://h.co/a/b/resolve/main/model.safetensors.index.json?download=1";
        assert_eq!(
            beside(idx, "model-00001-of-00002.safetensors").as_deref(),
            Ok("https://h.co/a/b/resolve/main/model-00001-of-00002.safetensors")
        );
        assert_eq!(beside(idx, "sub/x.safetensors").as_deref(), Ok("https://h.co/a/b/resolve/main/sub/x.safetensors"));
        assert_eq!(url_file_name(idx), "model.safetensors.index.json");
        let sha = "0123456789abcdef0123456789ABCDEF01234567";
        assert_eq!(
            at_commit(idx, sha).as_deref(),
            Some("https://h.co/a/b/resolve/0123456789abcdef0123456789abcdef01234567/model.safetensors.index.json?download=1")
        );
        assert_eq!(at_commit(idx, "main"), None, "not a commit hash");
        assert_eq!(at_commit(idx, &sha[1..]), None);
        assert_eq!(at_commit("https://h.co/x/model.safetensors.index.json", sha), None, "no revision");
    }

    fn cr(h: &str) -> RangeHeaders<'_> {
        RangeHeaders { content_range: Some(h), ..RangeHeaders::default() }
    }

    #[test]
    fn range_responses_are_judged() {
        assert_eq!(check_range_response(206, &cr("bytes 0-99/1000"), 0, 99, None), Ok(1000));
        assert_eq!(check_range_response(206, &cr("bytes 900-999/1000"), 900, 1099, None), Ok(1000), "short at the end");
        let none = RangeHeaders::default();
        assert_eq!(check_range_response(200, &none, 0, 99, None), Err(RangeError::RangeIgnored));
        assert_eq!(check_range_response(404, &none, 0, 99, None), Err(RangeError::Status(404)));
        assert!(matches!(
            check_range_response(206, &cr("bytes 5-99/1000"), 0, 99, None),
            Err(RangeError::BadContentRange(_))
        ));
        assert!(matches!(check_range_response(206, &none, 0, 99, None), Err(RangeError::BadContentRange(_))));
        assert_eq!(parse_content_range("bytes 0-0/5000000000"), Some((0, 0, 5_000_000_000)));
        assert_eq!(parse_content_range("bytes */1000"), None);
        assert!(RangeError::RangeIgnored.to_string().contains("does not support range requests"));
    }

    #[test]
    fn a_pinned_file_that_changed_is_an_error_not_mixed_bytes() {
        let pin = Pin { url: "https://h/x".into(), total: 1000, etag: Some("\"v1\"".into()), last_modified: None };
        let same = RangeHeaders { content_range: Some("bytes 10-19/1000"), etag: Some("\"v1\""), last_modified: None };
        assert_eq!(check_range_response(206, &same, 10, 19, Some(&pin)), Ok(1000));
        let bigger = RangeHeaders { content_range: Some("bytes 10-19/2000"), ..same.clone() };
        assert!(matches!(check_range_response(206, &bigger, 10, 19, Some(&pin)), Err(RangeError::Changed(_))));
        let retagged = RangeHeaders { etag: Some("\"v2\""), ..same.clone() };
        assert!(matches!(check_range_response(206, &retagged, 10, 19, Some(&pin)), Err(RangeError::Changed(_))));
        let whole = RangeHeaders::default();
        let e = check_range_response(200, &whole, 10, 19, Some(&pin)).unwrap_err();
        assert!(e.to_string().contains("the file changed on the server"), "{e}");
        assert_eq!(check_range_response(200, &whole, 10, 19, None), Err(RangeError::RangeIgnored));
        // An ETag gone from the response: the date still tells.
        let both = Pin { last_modified: Some("Tue, 01 Dec 2026 08:00:00 GMT".into()), ..pin.clone() };
        let untagged =
            RangeHeaders { etag: None, last_modified: Some("Wed, 02 Dec 2026 08:00:00 GMT"), ..same.clone() };
        assert!(matches!(check_range_response(206, &untagged, 10, 19, Some(&both)), Err(RangeError::Changed(_))));
        // Without an ETag, the date tells.
        let stamped = RangeHeaders { last_modified: Some("Wed, 02 Dec 2026 08:00:00 GMT"), ..same.clone() };
        let dated = Pin { etag: None, last_modified: Some("Tue, 01 Dec 2026 08:00:00 GMT".into()), ..pin.clone() };
        assert!(matches!(check_range_response(206, &stamped, 10, 19, Some(&dated)), Err(RangeError::Changed(_))));
        let undated = RangeHeaders { last_modified: Some("Tue, 01 Dec 2026 08:00:00 GMT"), etag: None, ..same };
        assert_eq!(check_range_response(206, &undated, 10, 19, Some(&dated)), Ok(1000));
    }

    #[test]
    fn only_http_urls_are_opened() {
        assert_eq!(check_url("https://h.co/a/model.gguf").as_deref(), Ok("https://h.co/a/model.gguf"));
        assert_eq!(check_url(" HTTP://127.0.0.1:8/x ").as_deref(), Ok("HTTP://127.0.0.1:8/x"));
        assert!(check_url("hf://a/b/c.gguf").unwrap().starts_with("https://huggingface.co/"));
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:,x",
            "blob:https://h/1",
            "x.gguf",
            "https:///x",
            "ftp://h/x",
            "",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        let idx = "https://h.co/r/model.safetensors.index.json";
        // Anything that leaves the index's folder is refused.
        for name in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "http://other/s.safetensors",
            "hf://other/repo/s.safetensors",
            "//cdn.h.co/s.safetensors",
            "/x.bin",
            "../other/s.safetensors",
            "a/../../s.safetensors",
            "./s.safetensors",
            "a//s.safetensors",
            "s.safetensors?x=1",
            "s.safetensors#x",
            "%2e%2e/s.safetensors",
            "..\\s.safetensors",
            "",
        ] {
            assert_eq!(beside(idx, name), Err(ShardNameError(name.to_owned())), "{name}");
        }
        assert_eq!(
            check_url(&beside(idx, "s-00001-of-00002.safetensors").unwrap()).as_deref(),
            Ok("https://h.co/r/s-00001-of-00002.safetensors")
        );
    }
}
