//! Learned absolute positions (GPT-2, StarCoder, MPT's optional table, OPT): a model that looks
//! each position up in a table of trained rows cannot run past them (llama.cpp reads the row
//! with `get_rows`, which asserts it is in the table), so no cache is sized beyond.

use crate::model::{Format, Tensor};

/// A checkpoint's table of learned positions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnedPositions {
    pub tensor: String,
    /// Positions it holds.
    pub rows: u64,
}

impl LearnedPositions {
    /// `t` as a table of learned positions, when it is the one a language model looks its
    /// positions up in: llama.cpp's `position_embd.weight` (`ne` = width, positions), or a
    /// Hugging Face decoder's `wpe` or `decoder.embed_positions` (rows = positions). A vision
    /// tower's or encoder's table is not one of these.
    pub fn of(format: Format, t: &Tensor) -> Option<Self> {
        let rows = match format {
            Format::Gguf if t.name == "position_embd.weight" => t.shape.get(1),
            Format::Gguf => None,
            Format::Safetensors | Format::Pickle => {
                let name = t.name.strip_prefix("transformer.").unwrap_or(&t.name);
                let name = name.strip_prefix("model.").unwrap_or(name);
                matches!(name, "wpe.weight" | "decoder.embed_positions.weight").then(|| t.shape.first()).flatten()
            }
        };
        rows.filter(|&&r| r > 0).map(|&rows| LearnedPositions { tensor: t.name.clone(), rows })
    }
}
