//! Telling file kinds apart from their first bytes and their name.

/// Bytes [`sniff`] looks at.
pub const SNIFF_BYTES: u64 = 16;

/// What a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Gguf,
    Safetensors,
    /// A shard index (`model.safetensors.index.json`, `pytorch_model.bin.index.json`): which
    /// shard holds each tensor.
    Index,
    /// A Hugging Face JSON config next to the weights ([`crate::config::CONFIG_NAMES`]), or a
    /// chat template file ([`crate::config::is_template_file`]).
    Config,
    /// A pickle checkpoint (`torch.save`): recognised, never loaded; the text says which form.
    Pickle(&'static str),
    /// A zip not named like a checkpoint: a torch or TorchScript archive when it holds a
    /// `data.pkl`, else another file.
    Zip,
    /// Anything else (config files, tokenizers, READMEs).
    Other,
}

/// The kind of the file called `name` (a path or file name) starting with `head`: by its bytes
/// first (a `.bin` that is safetensors, a `.gguf` that is not, a `.jit` zip), then by its name.
pub fn sniff(name: &str, head: &[u8]) -> FileKind {
    let lower = name.to_ascii_lowercase();
    if head.starts_with(b"GGUF") {
        return FileKind::Gguf;
    }
    if looks_like_safetensors(head) {
        return FileKind::Safetensors;
    }
    if head.starts_with(b"PK\x03\x04") {
        return match is_pickle_name(&lower) {
            true => FileKind::Pickle("a zip archive as written by torch.save"),
            // Any other name (`.jit`, none): a torch archive when its directory holds a data.pkl.
            false => FileKind::Zip,
        };
    }
    if head.len() >= 2 && head[0] == 0x80 && (2..=5).contains(&head[1]) {
        return FileKind::Pickle("a raw pickle stream");
    }
    if lower.ends_with(".gguf") {
        return FileKind::Gguf;
    }
    if lower.ends_with(".safetensors") {
        return FileKind::Safetensors;
    }
    if ["safetensors.index.json", ".bin.index.json", ".pt.index.json", ".pth.index.json"]
        .iter()
        .any(|s| lower.ends_with(s))
    {
        return FileKind::Index;
    }
    if crate::config::is_config_name(crate::text::base_name(&lower)) || crate::config::is_template_file(&lower) {
        return FileKind::Config;
    }
    if is_pickle_name(&lower) && !lower.ends_with(".json") {
        return FileKind::Pickle("named like a pickle checkpoint");
    }
    FileKind::Other
}

fn is_pickle_name(lower: &str) -> bool {
    // `.pth.tar`: the name old training scripts gave torch.save's output (`model_best.pth.tar`).
    [".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".pth.tar", ".pt.tar"].iter().any(|e| lower.ends_with(e))
}

/// An 8-byte little-endian length followed by `{`.
fn looks_like_safetensors(head: &[u8]) -> bool {
    head.len() > 8 && head[8] == b'{' && u64::from_le_bytes(head[..8].try_into().expect("8 bytes")) >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_apart() {
        assert_eq!(sniff("x", b"GGUF\x03\0\0\0"), FileKind::Gguf);
        assert_eq!(sniff("x.bin", b"\x02\0\0\0\0\0\0\0{}"), FileKind::Safetensors);
        assert_eq!(sniff("mislabelled.gguf", b"\x02\0\0\0\0\0\0\0{}"), FileKind::Safetensors, "bytes first");
        assert_eq!(sniff("broken.gguf", b"GGUX"), FileKind::Gguf, "then the name");
        assert!(matches!(sniff("weights.gguf", b"\x80\x02}q\0"), FileKind::Pickle(_)));
        assert_eq!(sniff("model.safetensors.index.json", b"{\n"), FileKind::Index);
        assert!(matches!(sniff("pytorch_model.bin", b"PK\x03\x04...."), FileKind::Pickle(_)));
        assert!(matches!(sniff("model_best.pth.tar", b"PK\x03\x04...."), FileKind::Pickle(_)));
        assert_eq!(sniff("dataset.tar", b"PK\x03\x04...."), FileKind::Zip);
        assert_eq!(sniff("silero_vad.jit", b"PK\x03\x04...."), FileKind::Zip);
        assert!(matches!(sniff("weights", b"\x80\x02}q\0"), FileKind::Pickle(_)));
        assert_eq!(sniff("model/config.json", b"{\"a\": 1}"), FileKind::Config);
        assert_eq!(sniff("model/Tokenizer_Config.json", b"{"), FileKind::Config);
        assert_eq!(sniff("tokenizer.json", b"{"), FileKind::Other);
        assert_eq!(sniff("pytorch_model.bin.index.json", b"{"), FileKind::Index);
    }
}
