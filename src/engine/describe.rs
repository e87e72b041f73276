//! One line on what a checkpoint is, after its kind (see [`crate::kind`]).

use crate::kind::{file_kinds, Kind};
use crate::model::{Checkpoint, MetaValue};

/// One line on what the checkpoint is, after its kind: the projector's type and width, the
/// adapter's rank and alpha (as [`crate::adapter::Adapter::describe`]), the imatrix's chunks,
/// the vocabulary's size.
pub fn describe(cp: &Checkpoint, kind: Kind) -> String {
    let value = |k: &str| match cp.meta(k) {
        Some(MetaValue::Gguf(v)) => Some(v.to_string()),
        Some(MetaValue::Text(t)) => Some(t.clone()),
        None => None,
    };
    match kind {
        Kind::Model => {
            // A model's projectors are files of their own: one file is the model alone (and
            // no pass over its tensors is needed to say so).
            let projectors = match cp.files.len() {
                0 | 1 => 0,
                _ => file_kinds(cp).iter().filter(|&&k| k == Kind::Projector).count(),
            };
            match projectors {
                0 => String::new(),
                1 => "with its multimodal projector".into(),
                n => format!("with {n} multimodal projectors"),
            }
        }
        Kind::Projector => {
            let facts = crate::projector::ProjectorFacts::read(
                |k| match cp.meta(k) {
                    Some(MetaValue::Gguf(v)) => Some(v),
                    _ => None,
                },
                cp.tensors.iter(),
            );
            let modality =
                match (cp.meta("clip.has_vision_encoder").is_some(), cp.meta("clip.has_audio_encoder").is_some()) {
                    (true, true) => "vision and audio",
                    (false, true) => "audio",
                    _ => "vision",
                };
            let mut s = format!("{} {modality} projector", facts.projector_type.as_deref().unwrap_or("a"));
            if let Some((w, _)) = facts.width {
                s.push_str(&format!(" into {w}-wide embeddings"));
            }
            s
        }
        Kind::Adapter => crate::adapter::adapter(cp).map(|a| a.describe()).unwrap_or_default(),
        Kind::Imatrix => {
            let mut parts = vec![format!("{} tensors of activation statistics", cp.tensors.len() / 2)];
            if let Some(n) = value("imatrix.chunk_count") {
                let size = value("imatrix.chunk_size").map(|s| format!(" of {s} tokens")).unwrap_or_default();
                parts.push(format!("{n} chunks{size}"));
            }
            if let Some(MetaValue::Gguf(crate::gguf::Value::Array(a))) = cp.meta("imatrix.datasets") {
                let names: Vec<String> = a.items.iter().map(|v| v.to_string()).collect();
                parts.push(format!("from {}", names.join(", ")));
            }
            parts.join(", ")
        }
        Kind::Vocab => match crate::tokens::tokenizer(cp) {
            Some(t) => format!("a {} tokenizer of {} tokens and no weights", t.model.unwrap_or("?"), t.len()),
            None => "a tokenizer and no weights".into(),
        },
    }
}
