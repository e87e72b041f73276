//! A Hugging Face Hub repository, platform-free: which repository a source names
//! (`hf://OWNER/NAME[@REV]`, or its web address on the endpoint), the API addresses that list
//! its files and pin a revision to a commit, and reading their answers.

/// The Hub's address unless `HF_ENDPOINT` names another, as `huggingface_hub` does.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// A model repository and the revision asked for (`None`: its default branch, `main`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoRef {
    pub owner: String,
    pub name: String,
    pub revision: Option<String>,
}

impl RepoRef {
    /// `OWNER/NAME`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// The revision asked for, `main` by default.
    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or("main")
    }
}

/// The repository `source` names: `hf://OWNER/NAME[@REV]` (a trailing `/` allowed), or the
/// repository's web address on `endpoint` or on the Hub (`…/OWNER/NAME`, `…/OWNER/NAME/tree/REV`).
/// `None` for anything else (a file's address, another site, a dataset or a Space).
pub fn parse_repo(source: &str, endpoint: &str) -> Option<RepoRef> {
    let source = source.trim();
    if let Some(rest) = source.strip_prefix("hf://") {
        let rest = rest.trim_end_matches('/');
        let (owner, name_rev) = rest.split_once('/')?;
        let (name, revision) = match name_rev.split_once('@') {
            Some((n, r)) => (n, Some(r.to_owned()).filter(|r| !r.is_empty())),
            None => (name_rev, None),
        };
        return repo(owner, name, revision);
    }
    let endpoint = endpoint.trim_end_matches('/');
    let path = [endpoint, DEFAULT_ENDPOINT].iter().find_map(|e| source.strip_prefix(e)?.strip_prefix('/'))?;
    let path = path.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
    let mut parts = path.split('/');
    let (owner, name) = (parts.next()?, parts.next()?);
    let revision = match (parts.next(), parts.next()) {
        (None, _) => None,
        (Some("tree"), Some(rev)) if !rev.is_empty() => Some(rev.to_owned()),
        _ => return None,
    };
    repo(owner, name, revision)
}

/// A repository named by `owner` and `name` when both are names the Hub allows.
fn repo(owner: &str, name: &str, revision: Option<String>) -> Option<RepoRef> {
    let ok = |s: &str| {
        !s.is_empty() && s != "." && s != ".." && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    let reserved = ["datasets", "spaces", "api", "docs", "models"];
    if !ok(owner) || !ok(name) || reserved.contains(&owner) {
        return None;
    }
    if revision.as_deref().is_some_and(|r| r.contains(['?', '#', ' ']) || r.split('/').any(|p| p == "..")) {
        return None;
    }
    Some(RepoRef { owner: owner.to_owned(), name: name.to_owned(), revision })
}

/// A revision as a URL path segment (`refs/pr/1` keeps its slashes encoded).
fn segment(revision: &str) -> String {
    revision.replace('%', "%25").replace('/', "%2F")
}

/// Where the Hub says which commit `repo`'s revision is (`{"sha": …}`).
pub fn revision_url(endpoint: &str, repo: &RepoRef) -> String {
    format!("{}/api/models/{}/revision/{}", endpoint.trim_end_matches('/'), repo.id(), segment(repo.revision()))
}

/// Where the Hub lists every file of `repo` at `commit` (paginated by `Link: …; rel="next"`).
pub fn tree_url(endpoint: &str, repo: &RepoRef, commit: &str) -> String {
    format!("{}/api/models/{}/tree/{}?recursive=true", endpoint.trim_end_matches('/'), repo.id(), segment(commit))
}

/// The address of file `path` of `repo` at `commit`.
pub fn resolve_url(endpoint: &str, repo: &RepoRef, commit: &str, path: &str) -> String {
    let path: Vec<String> = path.split('/').map(escape_path_part).collect();
    format!("{}/{}/resolve/{}/{}", endpoint.trim_end_matches('/'), repo.id(), segment(commit), path.join("/"))
}

/// A path part with the characters a URL path cannot hold as they are percent-encoded.
fn escape_path_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~+=,@()!$&'*;:".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The commit a revision answer names (`{"sha": "<40 hex>"}`).
pub fn parse_revision(json: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let sha = v.get("sha")?.as_str()?;
    (sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha.to_ascii_lowercase())
}

/// A file of the repository: its path and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoFile {
    pub path: String,
    pub size: u64,
}

/// The files of one page of a tree listing (folders left out), or why it is not one.
pub fn parse_tree(json: &str) -> Result<Vec<RepoFile>, String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("the file list is not JSON: {e}"))?;
    let items = v.as_array().ok_or("the file list is not a JSON array")?;
    let mut out = Vec::new();
    for item in items {
        if item.get("type").and_then(|t| t.as_str()) != Some("file") {
            continue;
        }
        let path = item.get("path").and_then(|p| p.as_str()).ok_or("a listed file has no path")?;
        let parts_ok = path.split('/').all(|p| !p.is_empty() && p != "." && p != "..");
        if !parts_ok || path.contains('\\') {
            return Err(format!("the file list names '{path}', which is not a path in the repository"));
        }
        let size = item.get("lfs").and_then(|l| l.get("size")).or_else(|| item.get("size")).and_then(|s| s.as_u64());
        let size = size.ok_or_else(|| format!("the file list gives no size for '{path}'"))?;
        out.push(RepoFile { path: path.to_owned(), size });
    }
    Ok(out)
}

/// The `rel="next"` address of a `Link` header.
pub fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|link| {
        let (url, params) = link.split_once(';')?;
        let next = params.split(';').any(|p| {
            let p = p.trim();
            p.eq_ignore_ascii_case("rel=\"next\"") || p.eq_ignore_ascii_case("rel=next")
        });
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        next.then(|| url.to_owned())
    })
}

/// Pages of a file listing followed at most (the Hub gives 1,000 files a page).
pub const MAX_PAGES: usize = 1000;

/// The listing of a repository's files, sans IO: the revision pinned to its commit, then the
/// tree page by page. A driver GETs [`Listing::next_url`] and hands each answer to
/// [`Listing::answer`] until there is no next address; [`Listing::finish`] gives the commit and
/// the files, sorted by path, each once.
pub struct Listing {
    endpoint: String,
    repo: RepoRef,
    commit: Option<String>,
    /// The next tree page, once the commit is known.
    next: Option<String>,
    pages: usize,
    files: Vec<RepoFile>,
}

impl Listing {
    /// The listing of `repo` on `endpoint`, from its revision.
    pub fn new(repo: &RepoRef, endpoint: &str) -> Self {
        Listing { endpoint: endpoint.to_owned(), repo: repo.clone(), commit: None, next: None, pages: 0, files: vec![] }
    }

    /// The address to GET next, or `None` when the listing is complete.
    pub fn next_url(&self) -> Option<String> {
        match &self.commit {
            None => Some(revision_url(&self.endpoint, &self.repo)),
            Some(_) => self.next.clone(),
        }
    }

    /// The answer to [`Listing::next_url`]: its status, text and `Link` header; an error ends
    /// the listing (no such repository or revision, a gated one, an answer that is not one).
    pub fn answer(&mut self, status: u16, text: &str, link: Option<&str>) -> Result<(), String> {
        let id = self.repo.id();
        let url = self.next_url().unwrap_or_default();
        match status {
            200 => {}
            401 | 403 | 404 => {
                return Err(format!("{id}: no such repository or revision, or it is gated (HTTP {status})"))
            }
            s => return Err(format!("{url}: the server answered HTTP {s}")),
        }
        if self.commit.is_none() {
            let commit = parse_revision(text)
                .ok_or_else(|| format!("{id}: the server names no commit for {}", self.repo.revision()))?;
            self.next = Some(tree_url(&self.endpoint, &self.repo, &commit));
            self.commit = Some(commit);
            return Ok(());
        }
        self.pages += 1;
        self.files.extend(parse_tree(text).map_err(|e| format!("{id}: {e}"))?);
        self.next = link.and_then(next_link).filter(|n| *n != url);
        if self.next.is_some() && self.pages >= MAX_PAGES {
            return Err(format!("{id}: the file list runs past {MAX_PAGES} pages"));
        }
        Ok(())
    }

    /// The commit and the files, once [`Listing::next_url`] is `None`.
    pub fn finish(mut self) -> (String, Vec<RepoFile>) {
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.files.dedup_by(|a, b| a.path == b.path);
        (self.commit.unwrap_or_default(), self.files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(owner: &str, name: &str, rev: Option<&str>) -> Option<RepoRef> {
        Some(RepoRef { owner: owner.into(), name: name.into(), revision: rev.map(Into::into) })
    }

    /// A listing asks for the revision, then the pages the `Link`s name, and stops at the last.
    #[test]
    fn a_listing_pins_the_commit_then_follows_the_pages() {
        let repo = r("o", "n", None).unwrap();
        let sha = "b".repeat(40);
        let mut l = Listing::new(&repo, "http://h");
        assert_eq!(l.next_url().unwrap(), "http://h/api/models/o/n/revision/main");
        l.answer(200, &format!(r#"{{"sha":"{sha}"}}"#), None).unwrap();
        assert_eq!(l.next_url().unwrap(), tree_url("http://h", &repo, &sha));
        let page = |p: &str| format!(r#"[{{"type":"file","path":"{p}","size":1}}]"#);
        l.answer(200, &page("z"), Some(r#"<http://h/next>; rel="next""#)).unwrap();
        assert_eq!(l.next_url().as_deref(), Some("http://h/next"));
        // A page that names itself as the next ends the listing rather than looping.
        l.answer(200, &page("a"), Some(r#"<http://h/next>; rel="next""#)).unwrap();
        assert_eq!(l.next_url(), None);
        let (commit, files) = l.finish();
        assert_eq!(commit, sha);
        assert_eq!(files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["a", "z"]);
        let mut gone = Listing::new(&repo, "http://h");
        assert!(gone.answer(404, "", None).unwrap_err().contains("no such repository"));
        let mut bad = Listing::new(&repo, "http://h");
        assert!(bad.answer(200, r#"{"sha":"main"}"#, None).unwrap_err().contains("names no commit"));
    }

    #[test]
    fn sources_name_a_repository() {
        let hub = DEFAULT_ENDPOINT;
        assert_eq!(parse_repo("hf://unsloth/gemma-3-4b-it-GGUF", hub), r("unsloth", "gemma-3-4b-it-GGUF", None));
        assert_eq!(parse_repo("hf://a/b@v1.0/", hub), r("a", "b", Some("v1.0")));
        assert_eq!(parse_repo("https://huggingface.co/Qwen/Qwen3-8B", hub), r("Qwen", "Qwen3-8B", None));
        assert_eq!(
            parse_repo("https://huggingface.co/Qwen/Qwen3-8B/tree/dev", hub),
            r("Qwen", "Qwen3-8B", Some("dev"))
        );
        assert_eq!(parse_repo("http://127.0.0.1:9/o/n/", "http://127.0.0.1:9/"), r("o", "n", None));
        for not in [
            "hf://a",
            "hf://a/b/c.gguf",
            "https://huggingface.co/a/b/resolve/main/c.gguf",
            "https://huggingface.co/datasets/a/b",
            "https://example.org/a/b",
            "https://huggingface.co/a/b c",
            "hf://../b",
            "hf://a/b@../x",
        ] {
            assert_eq!(parse_repo(not, hub), None, "{not}");
        }
    }

    #[test]
    fn api_addresses_follow_huggingface_hub() {
        let repo = r("o", "n", Some("refs/pr/1")).unwrap();
        assert_eq!(revision_url("http://h/", &repo), "http://h/api/models/o/n/revision/refs%2Fpr%2F1");
        let sha = "a".repeat(40);
        assert_eq!(tree_url("http://h", &repo, &sha), format!("http://h/api/models/o/n/tree/{sha}?recursive=true"));
        assert_eq!(
            resolve_url("http://h", &repo, &sha, "sub dir/m#1.gguf"),
            format!("http://h/o/n/resolve/{sha}/sub%20dir/m%231.gguf")
        );
    }

    #[test]
    fn answers_are_read_and_bad_ones_refused() {
        let sha = "0123456789abcdef0123456789ABCDEF01234567";
        assert_eq!(parse_revision(&format!(r#"{{"id":"o/n","sha":"{sha}"}}"#)), Some(sha.to_ascii_lowercase()));
        assert_eq!(parse_revision(r#"{"sha":"main"}"#), None);
        let page = r#"[{"type":"directory","path":"onnx"},{"type":"file","path":"onnx/m.onnx","size":7},
            {"type":"file","path":"m.gguf","size":134,"lfs":{"size":4000000000,"oid":"x"}}]"#;
        assert_eq!(
            parse_tree(page).unwrap(),
            [RepoFile { path: "onnx/m.onnx".into(), size: 7 }, RepoFile { path: "m.gguf".into(), size: 4_000_000_000 }]
        );
        assert!(parse_tree(r#"[{"type":"file","path":"../x","size":1}]"#).is_err());
        assert!(parse_tree(r#"[{"type":"file","path":"x"}]"#).is_err());
        assert!(parse_tree(r#"{"error":"Repository not found"}"#).is_err());
        let link =
            r#"<https://h/api/models/o/n/tree/main?recursive=true&cursor=abc>; rel="next", <https://h/x>; rel="prev""#;
        assert_eq!(next_link(link).as_deref(), Some("https://h/api/models/o/n/tree/main?recursive=true&cursor=abc"));
        assert_eq!(next_link(r#"<https://h/x>; rel="prev""#), None);
    }
}
