//! What crosses between the page and a worker: a byte source as a structured-clonable value,
//! and small helpers for the plain objects both post.

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use super::blob::BlobSource;
use super::http::{HttpSource, Meter};
use super::source::Source;
use tensorscope_values::remote::Pin;

/// A source as a worker receives it: the `Blob` itself, or `{url, pin}`.
pub fn source_to_js(s: &Source) -> JsValue {
    match s {
        Source::Blob(b) => b.blob().into(),
        Source::Http(h) => {
            let (url, pin) = h.spec();
            let pin = serde_json::to_string(&pin).expect("pins serialise");
            object(&[("url", JsValue::from_str(&url)), ("pin", JsValue::from_str(&pin))]).into()
        }
    }
}

/// The source a worker reads, from [`source_to_js`]; remote reads count on `meter`.
pub fn source_from_js(v: &JsValue, meter: &Meter) -> Result<Source, String> {
    if let Some(blob) = v.dyn_ref::<web_sys::Blob>() {
        return Ok(BlobSource::new(blob.clone()).into());
    }
    let url = get(v, "url").as_string().ok_or("a source is neither a Blob nor a URL")?;
    let pin: Pin =
        get(v, "pin").as_string().and_then(|p| serde_json::from_str(&p).ok()).ok_or("a URL without its pin")?;
    Ok(HttpSource::pinned(&url, pin, meter).into())
}

/// `obj[key]`, or `undefined`.
pub fn get(obj: &JsValue, key: &str) -> JsValue {
    Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// A plain object of `fields`.
pub fn object(fields: &[(&str, JsValue)]) -> Object {
    let o = Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o
}
