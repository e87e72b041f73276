//! The JavaScript API (`www/tensorscope.mjs`): the engine for other web apps, without the
//! viewer. Each function opens its input (a `File`, a list of them, a URL or a list of URLs),
//! does what the CLI command of the same name does, and returns the same JSON contract as an
//! object. Errors reject the promise with a message.

use js_sys::{Array, JsString, JSON};
use wasm_bindgen::prelude::*;

use crate::engine::diff::diff as header_diff;
use crate::engine::diff_report::DiffReport;
use crate::engine::hist_report::HistReport;
use crate::engine::hub::{parse_repo, DEFAULT_ENDPOINT};
use crate::engine::job::Values;
use crate::engine::model::Checkpoint;
use crate::engine::plan::Selection;
use crate::engine::repo_report::RepoReport;
use crate::engine::report::Report;
use crate::engine::variants::repository;
use crate::io::entries::Input;
use crate::io::hub::read_repo;
use crate::io::open::{open_inputs, open_urls, read_inputs};
use crate::io::values::{check as check_values, compare_values, histogram as histogram_values, settle_arrays};
use crate::io::{Cancel, Meter, Source};

/// Whether the page asked for the API only (`www/tensorscope.mjs` sets this before loading the
/// wasm), so that `main` mounts no viewer.
pub fn api_only() -> bool {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("__tensorscopeApiOnly")).is_ok_and(|v| v.is_truthy())
}

fn err(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

fn parse(text: &str) -> Result<JsValue, JsValue> {
    JSON::parse(text).map_err(|_| err("the report is not JSON"))
}

/// Files or URLs, from what JavaScript passed.
enum Given {
    Files(Vec<Input>),
    Urls(Vec<String>),
}

fn given(input: &JsValue) -> Result<Given, JsValue> {
    let items: Vec<JsValue> = if Array::is_array(input) {
        Array::from(input).iter().collect()
    } else if let Some(list) = input.dyn_ref::<web_sys::FileList>() {
        (0..list.length()).filter_map(|i| list.get(i)).map(JsValue::from).collect()
    } else {
        vec![input.clone()]
    };
    if items.is_empty() {
        return Err(err("nothing to open: give a File, a list of Files, a URL or a list of URLs"));
    }
    if items.iter().all(|v| v.is_string()) {
        return Ok(Given::Urls(items.iter().filter_map(|v| v.as_string()).collect()));
    }
    let files = items
        .iter()
        .map(|v| v.dyn_ref::<web_sys::File>().map(Input::from_file))
        .collect::<Option<Vec<Input>>>()
        .ok_or_else(|| err("expected File objects or URL strings"))?;
    Ok(Given::Files(files))
}

async fn open(input: &JsValue) -> Result<(Checkpoint, Vec<Source>), JsValue> {
    let cancel = Cancel::new();
    match given(input)? {
        Given::Files(mut files) => open_inputs(&mut files, &cancel, |_| {}).await.map_err(err),
        Given::Urls(urls) => open_urls(&urls, &Meter::default(), &cancel, |_| {}).await.map_err(err),
    }
}

fn flag(options: &JsValue, key: &str) -> bool {
    js_sys::Reflect::get(options, &JsValue::from_str(key)).is_ok_and(|v| v.is_truthy())
}

/// `options[key]`, when given (not undefined or null).
fn option(options: &JsValue, key: &str) -> Option<JsValue> {
    js_sys::Reflect::get(options, &JsValue::from_str(key)).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

fn number(options: &JsValue, key: &str) -> Option<f64> {
    js_sys::Reflect::get(options, &JsValue::from_str(key)).ok().and_then(|v| v.as_f64())
}

/// `tensorscope repo --json`: every checkpoint of a Hub repository (`hf://OWNER/NAME[@REV]` or
/// its web address; `options.endpoint` for another Hub-compatible server) or of files (a
/// folder's `FileList`, a list of `File`s), side by side.
#[wasm_bindgen(js_name = repo)]
pub async fn api_repo(source: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let cancel = Cancel::new();
    let (name, revision, parsed) = match source.as_string() {
        Some(address) => {
            let endpoint = option(&options, "endpoint").and_then(|e| e.as_string());
            let endpoint = endpoint.unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
            let repo = parse_repo(&address, &endpoint).ok_or_else(|| {
                err(format!(
                    "{address}: not a model repository's address (hf://OWNER/NAME[@REV] or {endpoint}/OWNER/NAME)"
                ))
            })?;
            let read = read_repo(&repo, &endpoint, &Meter::default(), &cancel, |_| {}).await.map_err(err)?;
            // As the CLI says them on standard error: the JSON lists these among the other files.
            for (path, why) in &read.unreadable {
                warn(&format!("tensorscope: {path} could not be read ({why})"));
            }
            (repo.id(), Some(read.commit), read.parsed)
        }
        None => {
            let Given::Files(mut files) = given(&source)? else {
                return Err(err("a repository is one address, or files"));
            };
            let parsed = read_inputs(&mut files, &cancel).await.map_err(err)?;
            (format!("{} files", parsed.len()), None, parsed)
        }
    };
    let (all, other) = repository(parsed);
    parse(&RepoReport { repo: &name, revision: revision.as_deref(), variants: &all, other_files: &other }.to_text())
}

#[wasm_bindgen]
extern "C" {
    /// `console.warn`.
    #[wasm_bindgen(js_namespace = console)]
    fn warn(text: &str);
}

/// `tensorscope inspect --json`: tensors, metadata, summary, estimate and findings.
#[wasm_bindgen(js_name = inspect)]
pub async fn api_inspect(input: JsValue) -> Result<JsValue, JsValue> {
    let (cp, _) = open(&input).await?;
    parse(&Report::inspect(&cp).to_text())
}

/// `tensorscope check --json`; `options.sha256` hashes every file, `options.scan` counts NaN and
/// infinite values in every tensor.
#[wasm_bindgen(js_name = check)]
pub async fn api_check(input: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let (cp, sources) = open(&input).await?;
    let (sha256, scan) = (flag(&options, "sha256"), flag(&options, "scan"));
    let outcome = if sha256 || scan {
        check_values(&cp, &sources, sha256, scan, &Cancel::new(), |_, _| {}).await.map_err(err)?.0
    } else {
        Default::default()
    };
    parse(&Report::check(&cp, &outcome, &[]).to_text())
}

/// `tensorscope hist --json` of tensor `name`: the whole tensor, or `options.sample` bytes of
/// blocks spread over it, or `options.elements = [a, b]`; `options.bins` (default 64).
#[wasm_bindgen(js_name = histogram)]
pub async fn api_histogram(input: JsValue, name: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    // Checked here, not by the glue: a number or an object passed as the name must be an error.
    let name = name.as_string().ok_or_else(|| err("the tensor's name must be a string"))?;
    let (elements, sample) = (option(&options, "elements"), option(&options, "sample"));
    // An option given but not understood is an error, never a silent read of the whole tensor.
    let selection = match (elements, sample) {
        (Some(_), Some(_)) => return Err(err("elements and sample cannot be given together")),
        (Some(e), None) => {
            let (a, b) = match Array::is_array(&e).then(|| Array::from(&e)) {
                Some(e) if e.length() == 2 => (e.get(0).as_f64(), e.get(1).as_f64()),
                _ => (None, None),
            };
            match (a, b) {
                (Some(a), Some(b)) if a >= 0.0 && b > a && b <= 2f64.powi(53) => {
                    Selection::Elements { start: a as u64, end: b as u64 }
                }
                _ => return Err(err("elements takes [a, b] with 0 <= a < b")),
            }
        }
        (None, Some(s)) => match s.as_f64() {
            Some(bytes) if bytes >= 1.0 && bytes <= 2f64.powi(53) => Selection::Sample { budget_bytes: bytes as u64 },
            _ => return Err(err("sample takes a number of bytes, at least 1")),
        },
        (None, None) => Selection::Whole,
    };
    let (cp, sources) = open(&input).await?;
    let t = cp.tensor(&name).ok_or_else(|| err(format!("no tensor named '{name}'")))?;
    let bins = number(&options, "bins").map_or(64, |b| b.clamp(1.0, f64::from(1 << 20)) as usize);
    let (sink, _) =
        histogram_values(&cp, t, &sources, &selection, false, &Cancel::new(), |_, _| {}).await.map_err(err)?;
    parse(&HistReport::new(t, &sink.values, bins, None).to_text())
}

/// `tensorscope diff --json` of `a` against `b`; `options.values` is `"none"`, `"sample"`
/// (the default) or `"all"`.
#[wasm_bindgen(js_name = diff)]
pub async fn api_diff(a: JsValue, b: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let (ca, sa) = open(&a).await?;
    let (cb, sb) = open(&b).await?;
    let values = js_sys::Reflect::get(&options, &JsValue::from_str("values"))
        .ok()
        .and_then(|v| v.dyn_into::<JsString>().ok())
        .map(String::from);
    let values = match values.as_deref() {
        None | Some("sample") => Some(Values::Sample),
        Some("all") => Some(Values::All),
        Some("none") => None,
        Some(other) => return Err(err(format!("values takes none, sample or all, not '{other}'"))),
    };
    let cancel = Cancel::new();
    let d = settle_arrays(&header_diff(&ca, &cb), &ca, &cb, &sa, &sb, &cancel).await.map_err(err)?;
    let d = match values {
        Some(v) => compare_values(&d, &ca, &cb, &sa, &sb, v, &cancel, |_, _| {}).await.map_err(err)?.0,
        None => d,
    };
    parse(&DiffReport { a: &ca, b: &cb, diff: &d }.to_text())
}
