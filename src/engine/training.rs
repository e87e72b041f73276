//! The training record kohya-ss (sd-scripts) and the model-spec convention leave in safetensors
//! metadata (`ss_*`, `modelspec.*`): grouped, with the JSON-in-a-string values decoded, the tag
//! frequencies summed over dataset folders, and long JSON pretty-printed.

use serde_json::Value as Json;

use super::model::{Checkpoint, MetaValue};

/// What the metadata says of how an adapter was trained.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Training {
    /// `ss_*` keys that are plain settings (learning rate, epochs, network dim, …), as stored.
    pub settings: Vec<(String, String)>,
    /// `modelspec.*` keys (title, architecture, …).
    pub modelspec: Vec<(String, String)>,
    /// Tags and how often they occur, summed over `ss_tag_frequency`'s folders, most frequent first.
    pub tags: Vec<(String, u64)>,
    /// Keys whose value is JSON (`ss_dataset_dirs`, `ss_datasets`, …), pretty-printed.
    pub documents: Vec<(String, String)>,
}

impl Training {
    /// Whether the metadata held any of it.
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty() && self.modelspec.is_empty() && self.tags.is_empty() && self.documents.is_empty()
    }
}

/// Longest JSON value decoded (a `ss_tag_frequency` of a large dataset is a few MB).
const MAX_JSON: usize = 16 << 20;

/// The training record in `cp`'s metadata (empty when it holds none).
pub fn training(cp: &Checkpoint) -> Training {
    let mut t = Training::default();
    for (key, value) in &cp.metadata {
        let MetaValue::Text(text) = value else { continue };
        if key.starts_with("modelspec.") {
            t.modelspec.push((key.clone(), text.clone()));
            continue;
        }
        if !key.starts_with("ss_") {
            continue;
        }
        let trimmed = text.trim_start();
        let looks_json = (trimmed.starts_with('{') || trimmed.starts_with('[')) && text.len() <= MAX_JSON;
        let json = looks_json.then(|| serde_json::from_str::<Json>(text).ok()).flatten();
        match json {
            Some(j) => {
                if key == "ss_tag_frequency" {
                    t.tags = tag_counts(&j);
                }
                let pretty = serde_json::to_string_pretty(&j).unwrap_or_else(|_| text.clone());
                t.documents.push((key.clone(), pretty));
            }
            None => t.settings.push((key.clone(), text.clone())),
        }
    }
    t
}

/// `{folder: {tag: count}}` summed per tag, most frequent first (then by name).
fn tag_counts(j: &Json) -> Vec<(String, u64)> {
    let mut sums: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for folder in j.as_object().into_iter().flat_map(|m| m.values()) {
        for (tag, n) in folder.as_object().into_iter().flatten() {
            let n = n.as_u64().unwrap_or(0);
            let e = sums.entry(tag.trim().to_owned()).or_default();
            *e = e.saturating_add(n);
        }
    }
    let mut v: Vec<(String, u64)> = sums.into_iter().collect();
    crate::sort::sort_by(&mut v, |a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Checkpoint, Format};

    #[test]
    fn kohya_metadata_is_grouped() {
        let mut cp = Checkpoint::empty(Format::Safetensors);
        for (k, v) in [
            ("ss_learning_rate", "0.0001"),
            ("ss_tag_frequency", r#"{"10_a": {"cat": 3, " dog": 1}, "5_b": {"dog": 4}}"#),
            ("ss_dataset_dirs", r#"{"10_a": {"n_repeats": 10}}"#),
            ("modelspec.title", "T"),
            ("format", "pt"),
            ("ss_bad_json", "{not json"),
        ] {
            cp.metadata.push((k.into(), MetaValue::Text(v.into())));
            cp.meta_file.push(0);
        }
        let t = training(&cp);
        assert_eq!(t.tags, [("dog".to_owned(), 5), ("cat".to_owned(), 3)]);
        assert_eq!(
            t.settings,
            [("ss_learning_rate".into(), "0.0001".into()), ("ss_bad_json".into(), "{not json".into())]
        );
        assert_eq!(t.modelspec.len(), 1);
        assert_eq!(t.documents.len(), 2);
        assert!(t.documents[1].1.contains("\n  \"10_a\""), "{}", t.documents[1].1);
    }
}
