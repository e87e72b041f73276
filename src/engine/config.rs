//! The JSON files that come with Hugging Face weights (`config.json`, `generation_config.json`,
//! `tokenizer_config.json`, ModelOpt's `hf_quant_config.json`): read whole, within a bound, and
//! kept as parsed JSON for the model facts and the quantization scheme.

use serde_json::Value as Json;

use crate::range::ByteRange;
use crate::step::{Decoder, FeedError, Step, Window};

/// Largest config file read; real ones are a few KB (a tokenizer config with a long chat
/// template or many added tokens, a few hundred KB).
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The file names read as configs.
pub const CONFIG_NAMES: [&str; 4] =
    ["config.json", "generation_config.json", "tokenizer_config.json", "hf_quant_config.json"];

/// Whether the file called `base` (a file name, no folder) is one of [`CONFIG_NAMES`].
pub fn is_config_name(base: &str) -> bool {
    CONFIG_NAMES.contains(&base)
}

/// Stable codes of the rules a config file can break.
pub mod rules {
    pub const TOO_LARGE: &str = "config.too_large";
    pub const NOT_JSON: &str = "config.not_json";
}

/// A config file as read: its JSON object, or why it could not be used.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigRead {
    Json(Json),
    TooLarge(u64),
    NotJson(String),
}

/// One config file of a checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    pub path: String,
    pub json: Json,
}

impl ConfigFile {
    /// The file name, without its folder.
    pub fn base_name(&self) -> &str {
        crate::shards::base_name(&self.path)
    }
}

/// Reads a whole config file in chunks, then parses it.
pub struct ConfigDecoder {
    file_len: u64,
    window: Window,
}

impl ConfigDecoder {
    pub fn new(file_len: u64) -> Self {
        ConfigDecoder { file_len, window: Window::new(0) }
    }
}

impl Decoder for ConfigDecoder {
    type Output = ConfigRead;

    fn step(&mut self) -> Step<ConfigRead> {
        if self.file_len > MAX_CONFIG_BYTES {
            return Step::Done(ConfigRead::TooLarge(self.file_len));
        }
        if self.window.end() < self.file_len {
            return Step::Need(ByteRange::new(self.window.end(), self.file_len));
        }
        let read = match serde_json::from_slice::<Json>(self.window.bytes()) {
            Ok(json @ Json::Object(_)) => ConfigRead::Json(json),
            Ok(_) => ConfigRead::NotJson("its top level is not a JSON object".into()),
            Err(e) => ConfigRead::NotJson(format!("it is not valid JSON: {e}")),
        };
        self.window = Window::new(self.file_len);
        Step::Done(read)
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        if offset == 0 && self.file_len <= MAX_CONFIG_BYTES {
            self.window.reserve(self.file_len);
        }
        self.window.push(offset, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::drive;

    fn read(bytes: &[u8]) -> ConfigRead {
        let d = ConfigDecoder::new(bytes.len() as u64);
        drive(d, 7, |r| Ok::<_, ()>(bytes[r.start as usize..r.end as usize].to_vec())).unwrap()
    }

    #[test]
    fn configs_are_read_whole_and_bounded() {
        assert_eq!(read(br#"{"num_hidden_layers": 2}"#), ConfigRead::Json(serde_json::json!({"num_hidden_layers": 2})));
        assert!(matches!(read(b"[1, 2]"), ConfigRead::NotJson(m) if m.contains("not a JSON object")));
        assert!(matches!(read(b"{\"a\": "), ConfigRead::NotJson(m) if m.contains("not valid JSON")));
        // A file over the bound is not read at all.
        let mut d = ConfigDecoder::new(MAX_CONFIG_BYTES + 1);
        assert!(matches!(d.step(), Step::Done(ConfigRead::TooLarge(n)) if n == MAX_CONFIG_BYTES + 1));
    }
}
