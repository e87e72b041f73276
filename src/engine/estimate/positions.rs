//! Learned absolute positions (GPT-2, StarCoder, MPT's optional table, OPT): a model that looks
//! each position up in a table of trained rows cannot run past them (llama.cpp reads the row
//! with `get_rows`, which asserts it is in the table), so no cache is sized beyond.

use crate::model::{Format, Tensor};

/// A checkpoint's table of learned positions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnedPositions {
    pub tensor: String,
    /// Positions it holds (OPT's table has two rows more).
    pub positions: u64,
}

/// Wrappers a Hugging Face decoder's names may sit under: its own model (`transformer.`,
/// `model.`, `biogpt.`), a multimodal or encoder-decoder model's language model (BLIP-2's
/// `language_model.`, TrOCR's `decoder.`), a training wrapper's `model.`.
const WRAPPERS: [&str; 5] = ["transformer.", "model.", "decoder.", "language_model.", "biogpt."];

impl LearnedPositions {
    /// `t` as a table of learned positions, when it is the one a language model looks its
    /// positions up in: llama.cpp's `position_embd.weight` (`ne` = width, positions), or a
    /// Hugging Face decoder's `wpe.weight` (GPT-2, rows = positions) or
    /// `decoder.embed_positions.weight` (OPT, BioGPT: two rows before the first position), under
    /// any of [`WRAPPERS`]. A vision tower's or an encoder's table is not one of these.
    pub fn of(format: Format, t: &Tensor) -> Option<Self> {
        let positions = match format {
            Format::Gguf if t.name == "position_embd.weight" => t.shape.get(1).copied(),
            Format::Gguf => None,
            Format::Safetensors | Format::Pickle => {
                let mut name = t.name.as_str();
                let mut decoder = false;
                while let Some(rest) = WRAPPERS.iter().find_map(|w| name.strip_prefix(w)) {
                    decoder |= name.starts_with("decoder.");
                    name = rest;
                }
                let rows = t.shape.first().copied();
                match name {
                    "wpe.weight" => rows,
                    "embed_positions.weight" if decoder => rows.map(|r| r.saturating_sub(2)),
                    _ => None,
                }
            }
        };
        positions.filter(|&p| p > 0).map(|positions| LearnedPositions { tensor: t.name.clone(), positions })
    }
}
