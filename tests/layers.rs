//! The crates' layers: no import circle between the top-level modules of a crate (a folder
//! counts as one), with `crate::` and `super::` paths resolved to the modules they name. That
//! each crate uses only the crates below it (formats, values, engine, the app), cargo enforces.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → the top-level modules its files name, for the crate rooted at `root`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let dir = root.parent().unwrap();
    let src = std::fs::read_to_string(root).unwrap();
    let mods: Vec<String> = declared_modules(&strip_comments(&src));
    let mut out = BTreeMap::new();
    for m in &mods {
        let mut files = Vec::new();
        let file = dir.join(format!("{m}.rs"));
        if file.exists() {
            files.push((file, vec![m.clone()]));
        } else {
            collect(&dir.join(m), vec![m.clone()], &mut files);
        }
        let mut deps = BTreeSet::new();
        for (f, path) in files {
            let text = strip_comments(&std::fs::read_to_string(&f).unwrap());
            for name in named_top_levels(&text, &path) {
                if &name != m && mods.contains(&name) {
                    deps.insert(name);
                }
            }
        }
        out.insert(m.clone(), deps);
    }
    out
}

/// Every `.rs` file under `dir` with its module path (`mod.rs` is its folder's module).
fn collect(dir: &Path, path: Vec<String>, out: &mut Vec<(PathBuf, Vec<String>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_str().unwrap().to_owned();
        if p.is_dir() {
            collect(&p, [path.clone(), vec![stem]].concat(), out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let module = if stem == "mod" { path.clone() } else { [path.clone(), vec![stem]].concat() };
            out.push((p, module));
        }
    }
}

fn strip_comments(src: &str) -> String {
    src.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn declared_modules(root: &str) -> Vec<String> {
    root.lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("pub ").unwrap_or(l.trim());
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

/// The top-level modules that `crate::x` and `super::…::x` paths in a file of module `path` name.
fn named_top_levels(text: &str, path: &[String]) -> Vec<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        out.push(ident(&text[i + "crate::".len()..]));
    }
    let mut rest = text;
    while let Some(i) = rest.find("super::") {
        let before = rest[..i].chars().last();
        let mut after = &rest[i..];
        let mut ups = 0;
        while let Some(s) = after.strip_prefix("super::") {
            ups += 1;
            after = s;
        }
        // `super` from module `path` is its parent: `ups` of them reach the root when they
        // leave nothing of the path.
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') && ups == path.len() {
            out.push(ident(after));
        }
        rest = &rest[i + "super::".len() * ups..];
    }
    out
}

/// A circle in `g`, when there is one.
fn circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit<'a>(
        g: &'a BTreeMap<String, BTreeSet<String>>,
        n: &'a str,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|&s| s == n) {
            return Some(stack[at..].iter().map(|s| s.to_string()).collect());
        }
        if !done.insert(n) {
            return None;
        }
        stack.push(n);
        for d in &g[n] {
            if let Some(c) = visit(g, d, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys().find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_circle_between_its_top_level_modules() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for root in ["src/formats/mod.rs", "src/values/mod.rs", "src/engine/mod.rs", "src/webio/mod.rs", "src/lib.rs"] {
        let g = graph(&here.join(root));
        assert!(g.len() > 3, "{root}: {} modules found", g.len());
        assert_eq!(circle(&g), None, "{root}: an import circle");
    }
    // The check itself finds a circle where there is one.
    let mut g = graph(&here.join("src/formats/mod.rs"));
    g.get_mut("range").unwrap().insert("model".into());
    assert!(circle(&g).is_some_and(|c| c.contains(&"range".to_owned())), "a planted circle is found");
}
