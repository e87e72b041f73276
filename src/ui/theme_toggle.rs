//! Theme switch: system (default), light, dark; remembered in localStorage.

use leptos::prelude::*;

use crate::io::browser;

const KEY: &str = "tensorscope-theme";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// Cycles the theme; the CSS follows the system unless a theme was chosen.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let saved = storage().and_then(|s| s.get_item(KEY).ok().flatten()).filter(|t| t == "light" || t == "dark");
    let theme = RwSignal::new(saved);
    Effect::new(move |_| {
        let t = theme.get();
        browser::set_theme(t.as_deref());
        if let Some(s) = storage() {
            let _ = match &t {
                Some(t) => s.set_item(KEY, t),
                None => s.remove_item(KEY),
            };
        }
    });
    let next = move |_| {
        theme.update(|t| {
            *t = match t.as_deref() {
                None => Some("light".into()),
                Some("light") => Some("dark".into()),
                _ => None,
            }
        })
    };
    view! {
        <button data-testid="theme" title="Theme: system, light or dark" on:click=next>
            {move || match theme.get().as_deref() {
                Some("light") => "Theme: light",
                Some("dark") => "Theme: dark",
                _ => "Theme: system",
            }}
        </button>
    }
}
