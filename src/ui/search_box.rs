//! A search field bound to a text signal.

use leptos::prelude::*;

/// `<input type=search>` whose text is `value`; `testid` names it for tests.
#[component]
pub fn SearchBox(value: RwSignal<String>, placeholder: &'static str, testid: &'static str) -> impl IntoView {
    view! {
        <input
            type="search"
            placeholder=placeholder
            data-testid=testid
            prop:value=move || value.get()
            on:input=move |ev| value.set(event_target_value(&ev))
        />
    }
}
