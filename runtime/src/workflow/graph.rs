//! `lobster graph`: a workflow's steps and data-flow edges as Mermaid,
//! Graphviz dot, or plain text (the reference's layout, with every label
//! escaped for its format and control characters flattened).

use super::template;
use crate::error::{Error, Result};
use crate::value::{js_to_string, Item};
use serde_json::Map;
use std::collections::HashSet;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Mermaid,
    Dot,
    Ascii,
}

struct Node {
    id: String,
    ty: &'static str,
    label: String,
    diamond: bool,
}

struct Edge {
    from: String,
    to: String,
    label: String,
}

/// `graph` argv (without `graph`) → the rendered graph plus a newline.
pub fn graph_cli(argv: &[String]) -> Result<String> {
    let mut file = None;
    let mut format = Format::Mermaid;
    let mut args_json = None;
    let mut i = 0;
    while i < argv.len() {
        let tok = argv[i].as_str();
        let (name, inline) = match tok.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (tok, None),
        };
        let mut value = || {
            inline.clone().or_else(|| {
                i += 1;
                argv.get(i).cloned()
            })
        };
        match name {
            "--file" => file = value(),
            "--format" => {
                format = match value().unwrap_or_default().as_str() {
                    "" | "mermaid" => Format::Mermaid,
                    "dot" => Format::Dot,
                    "ascii" => Format::Ascii,
                    _ => {
                        return Err(Error::parse(
                            "graph --format must be one of: mermaid, dot, ascii",
                        ))
                    }
                }
            }
            "--args-json" => args_json = Some(value().unwrap_or_default()),
            _ if file.is_none() && !tok.starts_with("--") => file = Some(tok.to_string()),
            _ if name.starts_with("--") => {
                let flags = ["file", "format", "args-json"];
                let near = crate::executor::suggest_flag(name.trim_start_matches('-'), flags)
                    .map(|n| format!(" (did you mean --{n}?)"))
                    .unwrap_or_default();
                return Err(
                    Error::parse(format!("lobster graph: unknown flag {name}{near}"))
                        .with_hint("`lobster help graph` lists its flags"),
                );
            }
            _ => {}
        }
        i += 1;
    }
    let file = file
        .filter(|f| !f.is_empty())
        .ok_or_else(|| Error::parse("graph requires a workflow file path (use --file <path>)"))?;
    let given = super::args::parse_args_json(args_json.as_deref(), "graph --args-json")?;
    let (source, doc) = super::load::load(std::path::Path::new(&file))?;
    let wf = super::validate::validate(source, &doc, None)?;
    let mut args = Map::new();
    for a in &wf.args {
        if let Some(d) = &a.default {
            args.insert(a.name.clone(), d.clone());
        }
    }
    args.extend(given);
    let mut out = render(&doc.value, &args, format);
    out.push('\n');
    Ok(out)
}

fn resolve_args(s: &str, args: &Map<String, Item>) -> String {
    template::pieces(s)
        .into_iter()
        .map(|p| match p {
            template::Piece::Lit(l) => l,
            template::Piece::Arg { name, raw } => {
                args.get(&name).map_or(raw, |v| js_to_string(Some(v)))
            }
            template::Piece::Ref { raw, .. } => raw,
        })
        .collect()
}

fn flatten(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

fn str_field<'a>(step: &'a Item, k: &str) -> Option<&'a str> {
    step.get(k).and_then(Item::as_str)
}

fn is_approval(step: &Item) -> bool {
    match step.get("approval") {
        Some(Item::Bool(true)) | Some(Item::Object(_)) => true,
        Some(Item::String(s)) => !s.trim().is_empty(),
        _ => false,
    }
}

fn step_type_and_details(step: &Item, args: &Map<String, Item>) -> (&'static str, String) {
    if let Some(p) = step.get("parallel").filter(|p| !p.is_null()) {
        let wait = p.get("wait").and_then(Item::as_str).unwrap_or("all");
        return ("parallel", format!("parallel ({wait})"));
    }
    if let Some(f) = str_field(step, "for_each") {
        return ("for_each", format!("for_each: {}", resolve_args(f, args)));
    }
    if let Some(w) = str_field(step, "workflow").filter(|w| !w.trim().is_empty()) {
        return ("workflow", format!("workflow: {}", resolve_args(w, args)));
    }
    if let Some(p) = str_field(step, "pipeline").filter(|w| !w.trim().is_empty()) {
        return ("pipeline", format!("pipeline: {}", resolve_args(p, args)));
    }
    if let Some(u) = str_field(step, "uses").filter(|w| !w.trim().is_empty()) {
        return ("uses", format!("uses: {}", resolve_args(u, args)));
    }
    let shell = str_field(step, "run").or_else(|| str_field(step, "command"));
    if let Some(s) = shell {
        let d = if s.trim().is_empty() {
            String::new()
        } else {
            format!("run: {}", resolve_args(s, args))
        };
        return ("run", d);
    }
    if is_approval(step) {
        return ("approval", "approval gate".into());
    }
    if step.get("input").is_some_and(Item::is_object) {
        return ("input", "input request".into());
    }
    ("step", String::new())
}

fn refs_in(v: &Item, out: &mut Vec<String>) {
    match v {
        Item::String(s) => {
            for (id, _) in template::refs(s) {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        Item::Array(a) => a.iter().for_each(|x| refs_in(x, out)),
        Item::Object(o) => o.values().for_each(|x| refs_in(x, out)),
        _ => {}
    }
}

/// Render the graph of a workflow document.
pub fn render(doc: &Item, args: &Map<String, Item>, format: Format) -> String {
    let steps = doc
        .get("steps")
        .and_then(Item::as_array)
        .cloned()
        .unwrap_or_default();
    let known: HashSet<String> = steps
        .iter()
        .filter_map(|s| str_field(s, "id").map(String::from))
        .collect();
    let mut nodes = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |e: Edge, edges: &mut Vec<Edge>| {
        if seen.insert(format!("{}|{}|{}", e.from, e.to, e.label)) {
            edges.push(e);
        }
    };
    let mut prev: Option<String> = None;
    for step in &steps {
        let id = str_field(step, "id").unwrap_or_default().to_string();
        let (ty, details) = step_type_and_details(step, args);
        let details = flatten(&details);
        let label = if details.is_empty() {
            id.clone()
        } else {
            format!("{id}\\n{}", truncate(&details, 80))
        };
        nodes.push(Node {
            id: id.clone(),
            ty,
            label,
            diamond: is_approval(step),
        });
        if let Some(p) = prev.replace(id.clone()) {
            add(
                Edge {
                    from: p,
                    to: id.clone(),
                    label: "next".into(),
                },
                &mut edges,
            );
        }
        let mut r = Vec::new();
        if let Some(s) = step.get("stdin") {
            refs_in(s, &mut r);
        }
        for from in r.into_iter().filter(|x| known.contains(x)) {
            add(
                Edge {
                    from,
                    to: id.clone(),
                    label: "stdin".into(),
                },
                &mut edges,
            );
        }
        if let Some(f) = str_field(step, "for_each") {
            for (from, _) in template::refs(f) {
                if known.contains(&from) {
                    add(
                        Edge {
                            from,
                            to: id.clone(),
                            label: "for_each".into(),
                        },
                        &mut edges,
                    );
                }
            }
        }
        let cond = step.get("when").or_else(|| step.get("condition"));
        if let Some(c) = cond.and_then(Item::as_str).filter(|c| !c.trim().is_empty()) {
            let label = truncate(&flatten(&format!("when: {}", c.trim())), 70);
            let mut r = Vec::new();
            refs_in(&Item::String(c.to_string()), &mut r);
            for from in r.into_iter().filter(|x| known.contains(x)) {
                add(
                    Edge {
                        from,
                        to: id.clone(),
                        label: label.clone(),
                    },
                    &mut edges,
                );
            }
        }
    }
    match format {
        Format::Mermaid => mermaid(&nodes, &edges),
        Format::Dot => dot(&nodes, &edges),
        Format::Ascii => ascii(&nodes, &edges),
    }
}

fn mermaid_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("&#124;"),
            c => out.push(c),
        }
    }
    out
}

fn mermaid(nodes: &[Node], edges: &[Edge]) -> String {
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut used = HashSet::new();
    for n in nodes {
        let mut base: String =
            n.id.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
        if base.is_empty() {
            base = "step".into();
        }
        if base.starts_with(|c: char| c.is_ascii_digit()) {
            base = format!("s_{base}");
        }
        let mut key = base.clone();
        let mut i = 2;
        while used.contains(&key) {
            key = format!("{base}_{i}");
            i += 1;
        }
        used.insert(key.clone());
        keys.push((n.id.clone(), key));
    }
    let key_of = |id: &str| keys.iter().find(|(i, _)| i == id).map(|(_, k)| k.clone());
    let mut lines = vec!["flowchart TD".to_string()];
    for (n, (_, key)) in nodes.iter().zip(&keys) {
        // Id and details on two lines: Mermaid breaks a label at `<br>`
        // (the reference wrote a literal backslash-n, shown as is).
        let label = match n.label.split_once("\\n") {
            Some((id, details)) => format!("{}<br>{}", mermaid_escape(id), mermaid_escape(details)),
            None => mermaid_escape(&n.label),
        };
        lines.push(if n.diamond {
            format!("  {key}{{\"{label}\"}}")
        } else {
            format!("  {key}[\"{label}\"]")
        });
    }
    if !nodes.is_empty() {
        lines.push(String::new());
    }
    for e in edges {
        if let (Some(f), Some(t)) = (key_of(&e.from), key_of(&e.to)) {
            lines.push(format!("  {f} -->|{}| {t}", mermaid_escape(&e.label)));
        }
    }
    lines.join("\n")
}

fn dot_escape(s: &str) -> String {
    flatten(s).replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot(nodes: &[Node], edges: &[Edge]) -> String {
    let mut lines = vec![
        "digraph workflow {".to_string(),
        "  rankdir=TB;".to_string(),
    ];
    for n in nodes {
        let shape = if n.diamond { "diamond" } else { "box" };
        // Id and details on two lines: `\n` is dot's line break (the
        // reference escaped it to a literal backslash-n).
        let label = match n.label.split_once("\\n") {
            Some((id, details)) => format!("{}\\n{}", dot_escape(id), dot_escape(details)),
            None => dot_escape(&n.label),
        };
        lines.push(format!(
            "  \"{}\" [shape={shape},label=\"{label}\"];",
            dot_escape(&n.id),
        ));
    }
    if !nodes.is_empty() {
        lines.push(String::new());
    }
    for e in edges {
        lines.push(format!(
            "  \"{}\" -> \"{}\" [label=\"{}\"];",
            dot_escape(&e.from),
            dot_escape(&e.to),
            dot_escape(&e.label)
        ));
    }
    lines.push("}".into());
    lines.join("\n")
}

fn ascii(nodes: &[Node], edges: &[Edge]) -> String {
    let mut lines = vec![
        "Workflow Graph".to_string(),
        String::new(),
        "Nodes:".to_string(),
    ];
    for n in nodes {
        let details = n
            .label
            .split_once("\\n")
            .map(|(_, d)| format!("({d})"))
            .unwrap_or_default();
        lines.push(
            format!("- {} [{}] {details}", flatten(&n.id), n.ty)
                .trim()
                .to_string(),
        );
    }
    lines.push(String::new());
    lines.push("Edges:".into());
    for e in edges {
        lines.push(format!("- {} -> {} ({})", e.from, e.to, e.label));
    }
    if edges.is_empty() {
        lines.push("- (none)".into());
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Item {
        json!({"steps":[
            {"id":"fetch","run":"echo \"<a|b>\" & ${who}"},
            {"id":"1x","stdin":"$fetch.stdout","approval":"ok?"},
            {"id":"go","run":"cat","when":"$1x.approved == true"}
        ]})
    }

    #[test]
    fn mermaid_escapes_and_keys() {
        let args = json!({"who":"me"}).as_object().unwrap().clone();
        let out = render(&doc(), &args, Format::Mermaid);
        assert_eq!(
            out,
            "flowchart TD\n  fetch[\"fetch<br>run: echo &quot;&lt;a&#124;b&gt;&quot; &amp; me\"]\n  s_1x{\"1x<br>approval gate\"}\n  go[\"go<br>run: cat\"]\n\n  fetch -->|next| s_1x\n  fetch -->|stdin| s_1x\n  s_1x -->|next| go\n  s_1x -->|when: $1x.approved == true| go"
        );
    }

    #[test]
    fn dot_and_ascii() {
        let out = render(&doc(), &Map::new(), Format::Dot);
        assert!(
            out.contains(
                "  \"fetch\" [shape=box,label=\"fetch\\nrun: echo \\\"<a|b>\\\" & ${who}\"];"
            ),
            "{out}"
        );
        assert!(out.contains("  \"1x\" [shape=diamond,"), "{out}");
        let out = render(&doc(), &Map::new(), Format::Ascii);
        assert!(out.starts_with("Workflow Graph\n\nNodes:\n- fetch [run] (run: echo \"<a|b>\" & ${who})\n- 1x [approval] (approval gate)"), "{out}");
        assert!(
            out.ends_with("- 1x -> go (when: $1x.approved == true)"),
            "{out}"
        );
    }
}
