//! The JSON files that come with Hugging Face weights (`config.json`, `generation_config.json`,
//! `tokenizer_config.json`, ModelOpt's `hf_quant_config.json`, a processor's `chat_template.json`):
//! read whole, within a bound, and kept as parsed JSON for the model facts, the quantization
//! scheme and the chat templates; and the chat template files transformers writes beside them
//! (`chat_template.jinja`, `additional_chat_templates/NAME.jinja`), kept as text.

use serde_json::Value as Json;

use crate::range::ByteRange;
use crate::step::{Decoder, FeedError, Step, Window};
use crate::text::folder;

/// Largest config file read; real ones are a few KB (a tokenizer config with a long chat
/// template or many added tokens, a few hundred KB).
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The file names read as configs.
pub const CONFIG_NAMES: [&str; 6] = [
    "config.json",
    "generation_config.json",
    "tokenizer_config.json",
    "hf_quant_config.json",
    "adapter_config.json",
    "chat_template.json",
];

/// The default chat template's own file, which transformers reads before `tokenizer_config.json`.
pub const TEMPLATE_FILE: &str = "chat_template.jinja";
/// The folder of transformers' named chat templates, one `NAME.jinja` each.
pub const TEMPLATE_DIR: &str = "additional_chat_templates";

/// The files a remote file opened by URL brings from its folder, as a folder's would be read
/// with it: the configs nearly every model's folder holds, and the chat template file today's
/// transformers saves (older folders keep the template in `tokenizer_config.json`). A folder
/// cannot be listed over plain HTTP, so each is asked for by name; the rarer ones
/// (`hf_quant_config.json`, whose facts newer exports also put in `config.json`;
/// `chat_template.json`) are not, as every file a server does not have is an error in the
/// browser's console.
pub const COMPANIONS: [&str; 4] = ["config.json", "generation_config.json", "tokenizer_config.json", TEMPLATE_FILE];

/// What PEFT saves beside its `adapter_model.*`: the adapter's config (rank, alpha, base model).
const ADAPTER_COMPANIONS: [&str; 1] = ["adapter_config.json"];

/// The files asked for beside a shard set's index or a file of safetensors or pickle weights
/// opened by URL, named `file_name`: [`COMPANIONS`], or an adapter's config beside PEFT's
/// `adapter_model.*`.
pub fn companions(file_name: &str) -> &'static [&'static str] {
    if crate::text::base_name(file_name).starts_with("adapter_model.") {
        &ADAPTER_COMPANIONS
    } else {
        &COMPANIONS
    }
}

/// Whether the file called `base` (a file name, no folder) is one of [`CONFIG_NAMES`].
pub fn is_config_name(base: &str) -> bool {
    CONFIG_NAMES.contains(&base)
}

/// Whether `path` is a chat template file: [`TEMPLATE_FILE`], or a `.jinja` file in
/// [`TEMPLATE_DIR`].
pub fn is_template_file(path: &str) -> bool {
    let base = crate::text::base_name(path);
    base == TEMPLATE_FILE || (base.ends_with(".jinja") && parent_name(path) == TEMPLATE_DIR)
}

/// The folder of the model whose companion `path` is: its own folder, or for a named chat
/// template the folder above [`TEMPLATE_DIR`] (each with its trailing separator).
pub fn companion_folder(path: &str) -> &str {
    let dir = folder(path);
    match is_template_file(path) && parent_name(path) == TEMPLATE_DIR {
        true => folder(dir.trim_end_matches(['/', '\\'])),
        false => dir,
    }
}

/// The name of the folder `path` is in (empty for a bare name).
fn parent_name(path: &str) -> &str {
    crate::text::base_name(folder(path).trim_end_matches(['/', '\\']))
}

/// Stable codes of the rules a config file can break.
pub mod rules {
    use crate::findings::Rule;

    pub const TOO_LARGE: Rule = Rule::warning("config.too_large");
    pub const NOT_JSON: Rule = Rule::warning("config.not_json");
}

/// A config file as read: its JSON object (a template file's text), or why it could not be used.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigRead {
    Json(Json),
    Text(String),
    TooLarge(u64),
    NotJson(String),
    /// An HTML document where JSON or a template was due: a page a server answered in the
    /// file's place (a host that serves its site for any path it has no file for), or one saved
    /// from a web page's address.
    Page,
}

/// Whether `bytes` open as an HTML document (`<!DOCTYPE html` or `<html`, in any case, after
/// white space).
fn is_html(bytes: &[u8]) -> bool {
    let head = bytes.trim_ascii_start();
    let starts = |p: &[u8]| head.len() >= p.len() && head[..p.len()].eq_ignore_ascii_case(p);
    starts(b"<!doctype html") || starts(b"<html")
}

/// One config file of a checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    pub path: String,
    /// Its JSON object; a chat template file's text as a JSON string.
    pub json: Json,
}

impl ConfigFile {
    /// The file name, without its folder.
    pub fn base_name(&self) -> &str {
        crate::text::base_name(&self.path)
    }
}

/// Reads a whole config file in chunks, then parses it (or, for a template file, keeps its text).
pub struct ConfigDecoder {
    file_len: u64,
    window: Window,
    text: bool,
}

impl ConfigDecoder {
    /// A JSON config of `file_len` bytes.
    pub fn new(file_len: u64) -> Self {
        ConfigDecoder { file_len, window: Window::new(0), text: false }
    }

    /// A chat template file of `file_len` bytes, kept as UTF-8 text.
    pub fn text(file_len: u64) -> Self {
        ConfigDecoder { text: true, ..ConfigDecoder::new(file_len) }
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
        let bytes = self.window.bytes();
        let read = if is_html(bytes) {
            ConfigRead::Page
        } else if self.text {
            match std::str::from_utf8(bytes) {
                Ok(t) => ConfigRead::Text(t.to_owned()),
                Err(e) => ConfigRead::NotJson(format!("it is not UTF-8 text: {e}")),
            }
        } else {
            match serde_json::from_slice::<Json>(bytes) {
                Ok(json @ Json::Object(_)) => ConfigRead::Json(json),
                Ok(_) => ConfigRead::NotJson("its top level is not a JSON object".into()),
                Err(e) => ConfigRead::NotJson(format!("it is not valid JSON: {e}")),
            }
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

/// What the config files say that a summary shows, as (label, text) pairs: the architecture,
/// the weights' dtype, the quantization method and the context lengths they declare.
pub fn highlights(configs: &[ConfigFile]) -> Vec<(&'static str, String)> {
    let find = |name: &str| configs.iter().find(|c| c.base_name() == name).map(|c| &c.json);
    let mut out = Vec::new();
    let text = |v: Option<&Json>| match v {
        Some(Json::String(s)) => Some(s.clone()),
        Some(v @ (Json::Number(_) | Json::Bool(_))) => Some(v.to_string()),
        _ => None,
    };
    if let Some(c) = find("config.json") {
        let nested = c.get("text_config");
        let get = |k: &str| c.get(k).or_else(|| nested.and_then(|n| n.get(k)));
        if let Some(a) = text(c.get("architectures").and_then(|a| a.get(0))) {
            out.push(("Architecture", a));
        }
        if let Some(t) = text(get("model_type")) {
            out.push(("Model type", t));
        }
        if let Some(d) = text(get("torch_dtype").or_else(|| get("dtype"))) {
            out.push(("Weights dtype (config)", d));
        }
        if let Some(q) = c.get("quantization_config").and_then(Json::as_object) {
            let mut parts: Vec<String> = ["quant_method", "format", "bits", "group_size", "quant_algo"]
                .iter()
                .filter_map(|k| Some(format!("{k} {}", text(q.get(*k))?)))
                .collect();
            if let Some(b) = q.get("weight_block_size").and_then(Json::as_array) {
                parts.push(format!("weight_block_size {}", Json::Array(b.clone())));
            }
            out.push(("Quantization (config)", parts.join(", ")));
        }
    }
    if let Some(q) = find("hf_quant_config.json").and_then(|c| c.get("quantization")) {
        if let Some(a) = text(q.get("quant_algo")) {
            out.push(("Quantization (ModelOpt)", a));
        }
    }
    if let Some(n) = find("tokenizer_config.json").and_then(|c| text(c.get("model_max_length"))) {
        out.push(("Tokenizer max length", n));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::drive;
    use serde_json::json;

    #[test]
    fn a_peft_adapter_brings_its_own_config_and_any_other_file_the_folders() {
        assert_eq!(companions("adapter_model.safetensors"), ["adapter_config.json"]);
        assert_eq!(companions("lora/adapter_model.bin"), ["adapter_config.json"]);
        for name in ["model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "my_adapter_model.pt"] {
            assert_eq!(companions(name), COMPANIONS, "{name}");
        }
        // Every companion is read as a config or a template.
        assert!(COMPANIONS.iter().chain(&ADAPTER_COMPANIONS).all(|c| is_config_name(c) || is_template_file(c)));
    }

    #[test]
    fn highlights_name_architecture_dtype_and_quantization() {
        let configs = [
            ConfigFile {
                path: "m/config.json".into(),
                json: json!({"architectures": ["Qwen3ForCausalLM"], "text_config": {"model_type": "qwen3",
                    "torch_dtype": "bfloat16"}, "quantization_config": {"quant_method": "fp8",
                    "weight_block_size": [128, 128]}}),
            },
            ConfigFile { path: "m/tokenizer_config.json".into(), json: json!({"model_max_length": 40960}) },
        ];
        assert_eq!(
            highlights(&configs),
            [
                ("Architecture", "Qwen3ForCausalLM".to_owned()),
                ("Model type", "qwen3".into()),
                ("Weights dtype (config)", "bfloat16".into()),
                ("Quantization (config)", "quant_method fp8, weight_block_size [128,128]".into()),
                ("Tokenizer max length", "40960".into()),
            ]
        );
    }

    fn read(bytes: &[u8]) -> ConfigRead {
        let d = ConfigDecoder::new(bytes.len() as u64);
        drive(d, 7, |r| Ok::<_, ()>(bytes[r.start as usize..r.end as usize].to_vec())).unwrap()
    }

    #[test]
    fn template_files_are_read_as_text() {
        let text = |bytes: &[u8]| {
            let d = ConfigDecoder::text(bytes.len() as u64);
            drive(d, 5, |r| Ok::<_, ()>(bytes[r.start as usize..r.end as usize].to_vec())).unwrap()
        };
        assert_eq!(
            text(b"{{ bos_token }}\n{% for m in messages %}"),
            ConfigRead::Text("{{ bos_token }}\n{% for m in messages %}".into())
        );
        assert!(matches!(text(b"{{ \xff }}"), ConfigRead::NotJson(m) if m.contains("not UTF-8")));
        for (path, template) in [
            ("m/chat_template.jinja", true),
            ("chat_template.jinja", true),
            ("m/additional_chat_templates/tool_use.jinja", true),
            ("additional_chat_templates/rag.jinja", true),
            ("m/templates/tool_use.jinja", false),
            ("m/additional_chat_templates/notes.txt", false),
            ("m/other.jinja", false),
        ] {
            assert_eq!(is_template_file(path), template, "{path}");
        }
        assert_eq!(companion_folder("m/additional_chat_templates/tool_use.jinja"), "m/");
        assert_eq!(companion_folder("additional_chat_templates/tool_use.jinja"), "");
        assert_eq!(companion_folder("m/chat_template.jinja"), "m/");
        assert_eq!(companion_folder("m/additional_chat_templates/config.json"), "m/additional_chat_templates/");
    }

    #[test]
    fn an_html_page_is_told_from_a_config_or_a_template() {
        for text in [true, false] {
            let read = |b: &[u8]| {
                let mut d = if text { ConfigDecoder::text(b.len() as u64) } else { ConfigDecoder::new(b.len() as u64) };
                let Step::Need(r) = d.step() else { panic!("a read first") };
                d.feed(r.start, b).unwrap();
                let Step::Done(read) = d.step() else { panic!("done") };
                read
            };
            for page in [&b"<!DOCTYPE html><html>"[..], b"\n  <html lang=en>", b"<!doctype HTML>"] {
                assert_eq!(read(page), ConfigRead::Page, "{}", String::from_utf8_lossy(page));
            }
            assert_ne!(read(b"{{ bos_token }}<html>"), ConfigRead::Page);
            assert_ne!(read(b"{\"html\": 1}"), ConfigRead::Page);
        }
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
