//! A Hugging Face Hub repository in the browser (or a Hub-compatible endpoint): the revision
//! pinned to the commit the server names, every file listed through the API (following `Link`
//! pagination), each file's headers read by `Range` at that commit; then its checkpoints, as the
//! CLI's `repo` shows them. Only headers cross the network.

use super::driver::Cancel;
use super::http::{get_text, Meter};
use super::open::{open_remote_files, OpenProgress};
use super::source::Source;
use crate::engine::hub::{resolve_url, Listing, RepoFile, RepoRef};
use crate::engine::job::RunError;
use crate::engine::model::FileInfo;
use crate::engine::open::Parsed;

/// A repository's files at a commit: their headers, with the source of each.
pub struct RepoRead {
    pub commit: String,
    pub parsed: Vec<(FileInfo, Parsed)>,
    pub sources: Vec<Source>,
    /// Files that could not be read, each with why (they stand as other files).
    pub unreadable: Vec<(String, String)>,
}

/// The commit `repo`'s revision is at, and every file there.
async fn list(
    repo: &RepoRef,
    endpoint: &str,
    meter: &Meter,
    cancel: &Cancel,
) -> Result<(String, Vec<RepoFile>), String> {
    let mut listing = Listing::new(repo, endpoint);
    while let Some(url) = listing.next_url() {
        let (status, text, link) = get_text(&url, meter, cancel).await?;
        listing.answer(status, &text, link.as_deref())?;
    }
    Ok(listing.finish())
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
    let (parsed, sources, unreadable) = open_remote_files(given, meter, cancel, progress).await?;
    Ok(RepoRead { commit, parsed, sources, unreadable })
}
