//! Keeps the arrows between rooms pointing one way (docs/ARCHITECTURE.md,
//! "Rooms"). Reads every module path in `runtime/src` — `use crate::…`,
//! `super::…` (resolved against the file's module and any inline `mod`),
//! and inline `crate::a::b` paths — and fails on:
//! - an import that points up a layer:
//!   doors (`cli`, `mcp`, `serve`) → `app` → engine (`workflow`, `resume`,
//!   `executor`) → capabilities (`commands`, `sandbox`, `process`, `broker`,
//!   `policy`, `registry`, `signing`) → `kernel` → base (`dsl`, `value`, `state`,
//!   `journal`, `envelope`, `schema`, `error`);
//! - an import between two rooms of one layer that closes a cycle.
//!
//! Test code inside `src` (a `#[cfg(test)] mod`, inline or a file of its
//! own) is read too, and held to the cycle rule, but it may point up: a
//! unit test of a command may run it through the executor. Tests that
//! exercise a whole room from outside live in `runtime/tests/`.
//!
//! [`ALLOWED`] lists the edges that still break a rule. It may only shrink:
//! the test also fails when a listed edge no longer breaks one (delete it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges (`from -> to`, rooms) that still break a rule, to be removed.
const ALLOWED: &[&str] = &[];

/// Rooms by layer, outermost first.
const LAYERS: &[(&str, &[&str])] = &[
    ("doors", &["cli", "mcp", "serve"]),
    ("request", &["app"]),
    ("engine", &["workflow", "resume", "executor"]),
    (
        "capabilities",
        &[
            "commands", "sandbox", "process", "broker", "policy", "registry", "signing",
        ],
    ),
    ("kernel", &["kernel"]),
    (
        "base",
        &[
            "dsl", "value", "state", "journal", "envelope", "schema", "error",
        ],
    ),
];

/// Names at the crate root that belong to a room (re-exports in lib.rs).
const ROOT_ALIASES: &[(&str, &str)] = &[("Error", "error"), ("Result", "error")];

/// The layer of a room: 0 is the outermost.
fn layer(room: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, rooms)| rooms.contains(&room))
}

#[test]
fn imports_point_down_and_close_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (edges, test_edges) = edges_of(&src);
    for room in edges.keys().chain(&test_edges).map(|(from, _)| from) {
        assert!(
            layer(room).is_some(),
            "room {room} is in no layer: add it to LAYERS in runtime/tests/layers.rs and to docs/ARCHITECTURE.md"
        );
    }
    let broken = broken_edges(&edges);
    let allowed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .map(|e| {
            let (a, b) = e.split_once(" -> ").expect("`from -> to`");
            (a.to_string(), b.to_string())
        })
        .collect();
    let mut problems = Vec::new();
    for (edge, why) in &broken {
        if !allowed.contains(edge) {
            let files: Vec<&str> = edges[edge].iter().map(String::as_str).collect();
            problems.push(format!(
                "{} -> {}: {why} (in {})",
                edge.0,
                edge.1,
                files.join(", ")
            ));
        }
    }
    // Test code may point up, but never closes a cycle in the library.
    for (from, to) in &test_edges {
        if layer(from) == layer(to)
            && !edges.contains_key(&(from.clone(), to.clone()))
            && reaches(&edges, to, from)
        {
            problems.push(format!(
                "{from} -> {to}: test code closes a cycle in the {} layer",
                LAYERS[layer(from).unwrap()].0
            ));
        }
    }
    for edge in &allowed {
        if !broken.contains_key(edge) {
            problems.push(format!(
                "{} -> {} is allowed in runtime/tests/layers.rs but breaks no rule any more: delete it from ALLOWED",
                edge.0, edge.1
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn the_reader_finds_every_kind_of_path() {
    let text = r#"
        use crate::a::X;
        use crate::{b::Y, c};
        use super::d;
        fn f() { let _ = crate::e::g(); let _s = "crate::nope::x"; }
        // crate::nope2::x
        mod inner { use super::super::super::h::Z; }
        #[cfg(test)]
        #[allow(dead_code)]
        mod tests { use crate::t::T; }
        #[cfg(test)]
        pub(crate) mod more;
    "#;
    let found = paths_in(text, &["room".into(), "file".into()]);
    let rooms: BTreeSet<(&str, bool)> = found.iter().map(|(r, t)| (r.as_str(), *t)).collect();
    let want = [("a", false), ("b", false), ("c", false), ("e", false)];
    let want = want
        .into_iter()
        .chain([("room", false), ("h", false), ("t", true)]);
    assert_eq!(rooms, want.collect(), "{found:?}");
    assert_eq!(test_file_modules(text), ["more"]);
}

/// An edge between rooms: `(from, to)`.
type Edge = (String, String);

/// Room-level edges `from -> to` (different rooms) of library code, with
/// the files, and those of test code.
fn edges_of(src: &Path) -> (BTreeMap<Edge, BTreeSet<String>>, BTreeSet<Edge>) {
    let files: Vec<(PathBuf, Vec<String>, String)> = rust_files(src)
        .into_iter()
        .filter_map(|file| {
            let module = module_of(file.strip_prefix(src).unwrap())?;
            let text = std::fs::read_to_string(&file).unwrap();
            Some((file, module, text))
        })
        .collect();
    // Modules declared under `#[cfg(test)]` (`mod tests;`): all test code.
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    for (_, module, text) in &files {
        for name in test_file_modules(text) {
            let mut m = module.clone();
            m.push(name);
            test_modules.push(m);
        }
    }
    let mut edges: BTreeMap<Edge, BTreeSet<String>> = BTreeMap::new();
    let mut test_edges: BTreeSet<Edge> = BTreeSet::new();
    for (file, module, text) in &files {
        let rel = file.strip_prefix(src).unwrap();
        let Some(from) = module.first().cloned() else {
            continue;
        };
        let test_file = test_modules.iter().any(|t| module.starts_with(t));
        for (to, in_test) in paths_in(text, module) {
            let to = ROOT_ALIASES
                .iter()
                .find(|(alias, _)| *alias == to)
                .map_or(to.clone(), |(_, room)| room.to_string());
            if to == from || layer(&to).is_none() {
                continue;
            }
            if test_file || in_test {
                test_edges.insert((from.clone(), to));
            } else {
                edges
                    .entry((from.clone(), to))
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    (edges, test_edges)
}

/// The names of file modules `text` declares under `#[cfg(test)]`.
fn test_file_modules(text: &str) -> Vec<String> {
    let tokens = tokenize(&strip(text));
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        if let Some(at) = cfg_test_item(&tokens, i) {
            if tokens.get(at + 2).map(String::as_str) == Some(";") {
                out.push(tokens[at + 1].clone());
            }
        }
    }
    out
}

/// When `#[cfg(test)]` starts at `i` and a `mod` item follows it (after
/// other attributes and `pub`), the index of that `mod`.
fn cfg_test_item(tokens: &[String], i: usize) -> Option<usize> {
    let want = ["#", "[", "cfg", "(", "test", ")", "]"];
    if tokens.len() < i + want.len() || tokens[i..i + want.len()] != want {
        return None;
    }
    let mut j = i + want.len();
    loop {
        match tokens.get(j).map(String::as_str) {
            Some("#") => {
                // Another attribute: skip to its closing bracket.
                let mut depth = 0;
                while let Some(t) = tokens.get(j) {
                    match t.as_str() {
                        "[" => depth += 1,
                        "]" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                j += 1;
            }
            Some("pub") => {
                j += 1;
                if tokens.get(j).map(String::as_str) == Some("(") {
                    while tokens.get(j).is_some_and(|t| t != ")") {
                        j += 1;
                    }
                    j += 1;
                }
            }
            Some("mod") => return Some(j),
            _ => return None,
        }
    }
}

/// The edges that break a rule, with why.
fn broken_edges(
    edges: &BTreeMap<(String, String), BTreeSet<String>>,
) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for (from, to) in edges.keys() {
        let (lf, lt) = (layer(from).unwrap(), layer(to).unwrap());
        if lt < lf {
            out.insert(
                (from.clone(), to.clone()),
                format!("points up, from {} to {}", LAYERS[lf].0, LAYERS[lt].0),
            );
        } else if lt == lf && reaches(edges, to, from) {
            out.insert(
                (from.clone(), to.clone()),
                format!("closes a cycle in the {} layer", LAYERS[lf].0),
            );
        }
    }
    out
}

/// Whether `to` is reachable from `from` over edges within one layer.
fn reaches(edges: &BTreeMap<(String, String), BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(r) = todo.pop() {
        if r == to {
            return true;
        }
        if !seen.insert(r.clone()) {
            continue;
        }
        for (a, b) in edges.keys() {
            if *a == r && layer(a) == layer(b) {
                todo.push(b.clone());
            }
        }
    }
    false
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The module path of a file under `src/` (`app/exec.rs` → `[app, exec]`,
/// `app/mod.rs` → `[app]`); `None` for the crate root and the binaries.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib.rs" || parts[0] == "main.rs") {
        return None;
    }
    if parts[0] == "bin" {
        return None;
    }
    let mut module: Vec<String> = parts.clone();
    let last = module.pop().unwrap();
    if last != "mod.rs" {
        module.push(last.trim_end_matches(".rs").to_string());
    }
    Some(module)
}

/// The room (first segment under the crate root) of every `crate::` and
/// `super::` path in `text`, a file of module `module`, and whether it is
/// in an inline `#[cfg(test)]` module.
fn paths_in(text: &str, module: &[String]) -> Vec<(String, bool)> {
    let code = strip(text);
    let tokens = tokenize(&code);
    let mut out = Vec::new();
    // Inline modules open at this point: (name, brace depth inside it, test).
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let mut test_mod_at: Option<usize> = None;
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d, _)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            "#" => {
                if let Some(at) = cfg_test_item(&tokens, i) {
                    test_mod_at = Some(at);
                }
            }
            "mod" if tokens.get(i + 2).map(String::as_str) == Some("{") => {
                let test = test_mod_at == Some(i);
                inline.push((tokens[i + 1].clone(), depth + 1, test));
            }
            "crate" | "super"
                if tokens.get(i + 1).map(String::as_str) == Some("::")
                    && (i == 0 || !matches!(tokens[i - 1].as_str(), "::" | "$")) =>
            {
                let base: Vec<String> = if t == "crate" {
                    i += 2;
                    Vec::new()
                } else {
                    let mut here: Vec<String> = module.to_vec();
                    here.extend(inline.iter().map(|(n, _, _)| n.clone()));
                    while tokens.get(i).map(String::as_str) == Some("super")
                        && tokens.get(i + 1).map(String::as_str) == Some("::")
                    {
                        here.pop();
                        i += 2;
                    }
                    here
                };
                let firsts = if tokens.get(i).map(String::as_str) == Some("{") {
                    group_heads(&tokens, i)
                } else {
                    tokens.get(i).cloned().into_iter().collect()
                };
                let in_test = inline.iter().any(|(_, _, t)| *t);
                match base.first() {
                    Some(room) => out.push((room.clone(), in_test)),
                    None => out.extend(
                        firsts
                            .into_iter()
                            .filter(|h| h.starts_with(|c: char| c.is_alphabetic() || c == '_'))
                            .map(|h| (h, in_test)),
                    ),
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The first identifier of every item of the `{…}` group starting at `at`.
fn group_heads(tokens: &[String], at: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expect_head = true;
    for t in &tokens[at..] {
        match t.as_str() {
            "{" => {
                depth += 1;
                if depth == 1 {
                    expect_head = true;
                }
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => expect_head = true,
            other if depth == 1 && expect_head => {
                heads.push(other.to_string());
                expect_head = false;
            }
            _ => {}
        }
    }
    heads
}

/// Identifiers, `::`, braces and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
            continue;
        }
        if !c.is_whitespace() {
            out.push(c.to_string());
        }
        i += 1;
    }
    out
}

/// `text` with comments and string and character literals blanked out.
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // Raw strings: r"…", r#"…"#, br#"…"#.
        if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str(" \"\" ");
                i = j;
                continue;
            }
        }
        if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str(" \"\" ");
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), else a lifetime.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str(" ' ");
                continue;
            }
            if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str(" ' ");
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
        // `br"…"` is still a raw string.
        && !(b[i - 1] == 'b' && (i < 2 || !(b[i - 2].is_alphanumeric() || b[i - 2] == '_')))
}
