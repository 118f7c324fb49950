//! The layering documented in `lib.rs` holds: every `crate::` path under `src/` names a layer
//! below the file's own, so the top-level modules import each other without a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges that go up, each with the reason it is still there. An edge listed here that the
/// code no longer has fails the test too, so that the list only shrinks.
const ALLOWED_UP: &[(&str, &str, &str)] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers in the order `lib.rs` documents them (`//! N. [`name`]`), bottom first.
fn documented_order(lib: &str) -> Vec<String> {
    let item = |l: &str| {
        let rest = l.strip_prefix("//! ")?.trim_start();
        let (n, rest) = rest.split_once(". [`")?;
        n.parse::<u32>().ok()?;
        Some(rest.split_once('`')?.0.to_owned())
    };
    lib.lines().filter_map(item).collect()
}

fn declared_modules(lib: &str) -> BTreeSet<String> {
    let name = |l: &str| Some(l.strip_prefix("pub mod ")?.strip_suffix(';')?.to_owned());
    lib.lines().filter_map(name).collect()
}

/// Every `.rs` file of the library under `dir`, with the top-level module it belongs to.
fn files(dir: &Path, top: Option<&str>, out: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        match top {
            None if path.is_dir() && name != "bin" => files(&path, Some(&name), out),
            None if name.ends_with(".rs")
                && !["lib.rs", "main.rs", "layers_tests.rs"].contains(&name.as_str()) =>
            {
                let stem = name.trim_end_matches(".rs");
                out.push((stem.strip_suffix("_tests").unwrap_or(stem).to_owned(), path));
            }
            Some(top) if path.is_dir() => files(&path, Some(top), out),
            Some(top) if name.ends_with(".rs") => out.push((top.to_owned(), path)),
            _ => {}
        }
    }
}

/// The top-level modules a file names through `crate::x` or `crate::{x, y::z}`.
fn imports(text: &str) -> BTreeSet<String> {
    let ident =
        |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let (mut depth, mut start) = (0, 0);
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            found.insert(ident(&group[start..i]));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            found.insert(ident(&group[start..i]));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            }
            None => {
                found.insert(ident(rest));
            }
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The module graph: (from, to) → the files that make the edge.
fn graph(modules: &BTreeSet<String>) -> BTreeMap<(String, String), Vec<PathBuf>> {
    let mut all = Vec::new();
    files(&src(), None, &mut all);
    let mut edges: BTreeMap<(String, String), Vec<PathBuf>> = BTreeMap::new();
    for (from, path) in all {
        assert!(modules.contains(&from), "{} belongs to no module declared in lib.rs", path.display());
        for to in imports(&std::fs::read_to_string(&path).unwrap()) {
            if to != from && modules.contains(&to) {
                edges.entry((from.clone(), to)).or_default().push(path.clone());
            }
        }
    }
    edges
}

/// A cycle through the edges, if there is one.
fn cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeSet<(String, String)>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            return Some(path[i..].iter().cloned().chain([n.to_owned()]).collect());
        }
        if !done.insert(n.to_owned()) {
            return None;
        }
        path.push(n.to_owned());
        let found = edges.iter().filter(|(f, _)| f == n).find_map(|(_, t)| visit(t, edges, path, done));
        path.pop();
        found
    }
    let mut done = BTreeSet::new();
    edges.iter().find_map(|(f, _)| visit(f, edges, &mut Vec::new(), &mut done))
}

#[test]
fn lib_rs_documents_every_module_as_one_layer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let order = documented_order(&lib);
    let documented: BTreeSet<String> = order.iter().cloned().collect();
    assert_eq!(documented.len(), order.len(), "a layer listed twice in lib.rs: {order:?}");
    assert_eq!(documented, declared_modules(&lib), "lib.rs's layer list and its modules differ");
}

#[test]
fn modules_import_only_the_layers_below_them() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let order = documented_order(&lib);
    let rank = |m: &str| order.iter().position(|o| o == m).unwrap_or(usize::MAX);
    let edges = graph(&declared_modules(&lib));
    let allowed = |f: &str, t: &str| ALLOWED_UP.iter().any(|(af, at, _)| *af == f && *at == t);
    let up: Vec<String> = edges
        .iter()
        .filter(|((f, t), _)| rank(t) >= rank(f) && !allowed(f, t))
        .map(|((f, t), files)| format!("{f} -> {t} ({})", files[0].display()))
        .collect();
    assert!(up.is_empty(), "imports that go up the layers documented in lib.rs: {up:#?}");
    for (f, t, why) in ALLOWED_UP {
        assert!(
            edges.contains_key(&(f.to_string(), t.to_string())),
            "{f} -> {t} is gone ({why}): drop it from ALLOWED_UP"
        );
    }
    let down = edges.keys().filter(|(f, t)| !allowed(f, t)).cloned().collect();
    assert_eq!(cycle(&down), None, "the modules import each other in a cycle");
}

#[test]
fn imports_are_read_from_paths_and_groups() {
    let text = "use crate::config::Config;\nuse crate::{names::is_glob, stomp::{Frame, Command}};\nx(crate::envelope::new_uuid7());";
    assert_eq!(imports(text), ["config", "envelope", "names", "stomp"].map(String::from).into());
}

#[test]
fn a_cycle_is_found() {
    let edges = [("a", "b"), ("b", "c"), ("c", "a")].map(|(f, t)| (f.to_owned(), t.to_owned())).into();
    assert_eq!(cycle(&edges).map(|c| c.len()), Some(4));
}
