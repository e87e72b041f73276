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

/// `name` resolved against the URL `base` (a shard named in an index, relative to the index).
pub fn join_url(base: &str, name: &str) -> String {
    if name.contains("://") {
        return name.to_owned();
    }
    if name.starts_with('/') {
        return format!("{}{name}", base_origin(base).unwrap_or(""));
    }
    let path_end = base.find(['?', '#']).unwrap_or(base.len());
    let dir = base[..path_end].rfind('/').map_or("", |i| &base[..=i]);
    format!("{dir}{name}")
}

fn base_origin(url: &str) -> Option<&str> {
    let scheme_end = url.find("://")? + 3;
    let host_end = url[scheme_end..].find('/').map_or(url.len(), |i| scheme_end + i);
    Some(&url[..host_end])
}

/// The file name at the end of a URL's path.
pub fn url_file_name(url: &str) -> &str {
    let path_end = url.find(['?', '#']).unwrap_or(url.len());
    url[..path_end].rsplit('/').next().unwrap_or(url)
}

/// Why a response to a `Range` request cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeError {
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

/// Judge a response to `Range: bytes=start-end_inclusive`: the file's total size, or why not.
pub fn check_range_response(
    status: u16,
    content_range: Option<&str>,
    start: u64,
    end_inclusive: u64,
) -> Result<u64, RangeError> {
    match status {
        206 => {}
        200 => return Err(RangeError::RangeIgnored),
        s => return Err(RangeError::Status(s)),
    }
    let header = content_range.unwrap_or("");
    match parse_content_range(header) {
        Some((a, b, total)) if a == start && (b == end_inclusive || (b < end_inclusive && b + 1 == total)) => Ok(total),
        _ => Err(RangeError::BadContentRange(header.to_owned())),
    }
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
            join_url(idx, "model-00001-of-00002.safetensors"),
            "https://h.co/a/b/resolve/main/model-00001-of-00002.safetensors"
        );
        assert_eq!(join_url(idx, "/x.bin"), "https://h.co/x.bin");
        assert_eq!(join_url(idx, "http://other/s.safetensors"), "http://other/s.safetensors");
        assert_eq!(url_file_name(idx), "model.safetensors.index.json");
    }

    #[test]
    fn range_responses_are_judged() {
        assert_eq!(check_range_response(206, Some("bytes 0-99/1000"), 0, 99), Ok(1000));
        assert_eq!(check_range_response(206, Some("bytes 900-999/1000"), 900, 1099), Ok(1000), "short at the end");
        assert_eq!(check_range_response(200, None, 0, 99), Err(RangeError::RangeIgnored));
        assert_eq!(check_range_response(404, None, 0, 99), Err(RangeError::Status(404)));
        assert!(matches!(
            check_range_response(206, Some("bytes 5-99/1000"), 0, 99),
            Err(RangeError::BadContentRange(_))
        ));
        assert!(matches!(check_range_response(206, None, 0, 99), Err(RangeError::BadContentRange(_))));
        assert_eq!(parse_content_range("bytes 0-0/5000000000"), Some((0, 0, 5_000_000_000)));
        assert_eq!(parse_content_range("bytes */1000"), None);
        assert!(RangeError::RangeIgnored.to_string().contains("does not support range requests"));
    }
}
