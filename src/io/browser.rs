//! Small browser services the viewer uses: fetching the sample, downloads, clipboard, the URL hash.

use js_sys::{Array, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, BlobPropertyBag};

use super::blob::js_error;

fn window() -> Result<web_sys::Window, String> {
    web_sys::window().ok_or_else(|| "no window".to_owned())
}

/// GET `url` and return its body as a Blob.
pub async fn fetch_blob(url: &str) -> Result<Blob, String> {
    let resp = JsFuture::from(window()?.fetch_with_str(url)).await.map_err(js_error)?;
    let resp: web_sys::Response = resp.dyn_into().map_err(js_error)?;
    if !resp.ok() {
        return Err(format!("{url}: HTTP {}", resp.status()));
    }
    let blob = JsFuture::from(resp.blob().map_err(js_error)?).await.map_err(js_error)?;
    blob.dyn_into().map_err(js_error)
}

/// A Blob of `parts` (byte chunks) with MIME type `mime`.
pub fn blob_of(parts: &Array, mime: &str) -> Result<Blob, String> {
    let opts = BlobPropertyBag::new();
    opts.set_type(mime);
    Blob::new_with_u8_array_sequence_and_options(parts, &opts).map_err(js_error)
}

/// A JS copy of `bytes`, to collect as a Blob part.
pub fn part(bytes: &[u8]) -> JsValue {
    Uint8Array::from(bytes).into()
}

/// Save `blob` as a download called `file_name`.
pub fn download(blob: &Blob, file_name: &str) -> Result<(), String> {
    let url = web_sys::Url::create_object_url_with_blob(blob).map_err(js_error)?;
    let doc = window()?.document().ok_or("no document")?;
    let a: web_sys::HtmlAnchorElement = doc.create_element("a").map_err(js_error)?.unchecked_into();
    a.set_href(&url);
    a.set_download(file_name);
    a.set_attribute("data-testid", "download-link").map_err(js_error)?;
    a.click();
    // Revoke later: the download reads the URL asynchronously.
    let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    let _ = window()?.set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 60_000);
    Ok(())
}

/// Copy `text` to the clipboard (`navigator.clipboard.writeText`); false when unavailable.
pub async fn copy_text(text: &str) -> bool {
    let Ok(w) = window() else { return false };
    let Ok(clip) = js_sys::Reflect::get(&w.navigator(), &"clipboard".into()) else { return false };
    let Ok(write) = js_sys::Reflect::get(&clip, &"writeText".into()) else { return false };
    let Ok(write) = write.dyn_into::<js_sys::Function>() else { return false };
    match write.call1(&clip, &text.into()) {
        Ok(p) => match p.dyn_into::<js_sys::Promise>() {
            Ok(p) => JsFuture::from(p).await.is_ok(),
            Err(_) => false,
        },
        Err(_) => false,
    }
}

/// The location hash, with its `#`.
pub fn hash() -> String {
    window().ok().and_then(|w| w.location().hash().ok()).unwrap_or_default()
}

/// Set the location hash without scrolling (`history.replaceState`), or clear it.
pub fn set_hash(hash: &str) {
    let Ok(w) = window() else { return };
    if let Ok(h) = w.history() {
        let url = if hash.is_empty() {
            let l = w.location();
            format!("{}{}", l.pathname().unwrap_or_default(), l.search().unwrap_or_default())
        } else {
            hash.to_owned()
        };
        let _ = h.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}

/// Set `data-theme` on `<html>` ("light", "dark", or none to follow the system).
pub fn set_theme(theme: Option<&str>) {
    let Some(html) = window().ok().and_then(|w| w.document()).and_then(|d| d.document_element()) else { return };
    let _ = match theme {
        Some(t) => html.set_attribute("data-theme", t),
        None => html.remove_attribute("data-theme"),
    };
}

/// The values of query parameter `key` in the page's URL (`?url=a&url=b`), decoded.
pub fn query_values(key: &str) -> Vec<String> {
    let search = window().ok().and_then(|w| w.location().search().ok()).unwrap_or_default();
    search
        .trim_start_matches('?')
        .split('&')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == key).then(|| crate::engine::viewer::percent_decode(&v.replace('+', " ")))?
        })
        .collect()
}

/// Whether the page's URL has query parameter `key` (with or without a value).
pub fn has_query(key: &str) -> bool {
    let search = window().ok().and_then(|w| w.location().search().ok()).unwrap_or_default();
    search.trim_start_matches('?').split('&').any(|kv| kv.split('=').next() == Some(key))
}

/// Make query parameter `key` of the page's URL `values` (none: drop it), keeping every other
/// parameter (`embed`, `vs`, …) and the hash, so the address bar can be shared or reloaded.
pub fn set_query(key: &str, values: &[String]) {
    let Ok(w) = window() else { return };
    let l = w.location();
    let query = crate::engine::viewer::with_query_values(&l.search().unwrap_or_default(), key, values);
    let url = format!("{}{query}{}", l.pathname().unwrap_or_default(), l.hash().unwrap_or_default());
    if let Ok(h) = w.history() {
        let _ = h.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}

/// The text of a Blob (a dropped file of expected hashes).
pub async fn blob_text(blob: &Blob) -> Result<String, String> {
    let t = JsFuture::from(blob.text()).await.map_err(js_error)?;
    t.as_string().ok_or_else(|| "not text".to_owned())
}
