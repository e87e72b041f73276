//! A Hugging Face Hub repository in the browser (or a Hub-compatible endpoint): the revision
//! pinned to the commit the server names, every file listed through the API (following `Link`
//! pagination), each file's headers read by `Range` at that commit; then its checkpoints, as the
//! CLI's `repo` shows them. Only headers cross the network.

use super::driver::Cancel;
use super::http::{get_text, Meter};
use super::open::{open_remote_files, OpenProgress};
use super::source::Source;
use crate::engine::hub::{
    next_link, parse_revision, parse_tree, resolve_url, revision_url, tree_url, RepoFile, RepoRef,
};
use crate::engine::job::RunError;
use crate::engine::model::FileInfo;
use crate::engine::open::Parsed;

/// Pages of a file listing followed at most (the Hub gives 1,000 files a page).
const MAX_PAGES: usize = 1000;

/// A repository's files at a commit: their headers, with the source of each.
pub struct RepoRead {
    pub commit: String,
    pub parsed: Vec<(FileInfo, Parsed)>,
    pub sources: Vec<Source>,
}

/// The commit `repo`'s revision is at, and every file there.
async fn list(
    repo: &RepoRef,
    endpoint: &str,
    meter: &Meter,
    cancel: &Cancel,
) -> Result<(String, Vec<RepoFile>), String> {
    let get = |url: String| async move {
        let (status, text, link) = get_text(&url, meter, cancel).await?;
        match status {
            200 => Ok((text, link)),
            401 | 403 | 404 => {
                Err(format!("{}: no such repository or revision, or it is gated (HTTP {status})", repo.id()))
            }
            s => Err(format!("{url}: the server answered HTTP {s}")),
        }
    };
    let (answer, _) = get(revision_url(endpoint, repo)).await?;
    let commit = parse_revision(&answer)
        .ok_or_else(|| format!("{}: the server names no commit for {}", repo.id(), repo.revision()))?;
    let mut files = Vec::new();
    let mut next = Some(tree_url(endpoint, repo, &commit));
    for _ in 0..MAX_PAGES {
        let Some(url) = next.take() else { break };
        let (text, link) = get(url.clone()).await?;
        files.extend(parse_tree(&text).map_err(|e| format!("{}: {e}", repo.id()))?);
        next = link.as_deref().and_then(next_link).filter(|n| *n != url);
    }
    if next.is_some() {
        return Err(format!("{}: the file list runs past {MAX_PAGES} pages", repo.id()));
    }
    crate::engine::sort::sort_by(&mut files, |a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    Ok((commit, files))
}

/// Read `repo` on `endpoint`: pin its revision, list its files, read every file's headers.
pub async fn read_repo(
    repo: &RepoRef,
    endpoint: &str,
    meter: &Meter,
    cancel: &Cancel,
    progress: impl FnMut(OpenProgress),
) -> Result<RepoRead, RunError> {
    let (commit, files) = list(repo, endpoint, meter, cancel).await.map_err(RunError::Read)?;
    let given: Vec<(String, String)> =
        files.iter().map(|f| (f.path.clone(), resolve_url(endpoint, repo, &commit, &f.path))).collect();
    let (parsed, sources) = open_remote_files(given, meter, cancel, progress).await?;
    Ok(RepoRead { commit, parsed, sources })
}
