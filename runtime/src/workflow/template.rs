//! `${arg}` and `$step.path` templating.
//!
//! The reference pastes values into shell text raw (spec §4.1 item 2). Here a
//! template is split into [`Piece`]s once and rendered for its destination:
//!
//! - [`Style::Shell`] (`run:` lines): every substituted value is placed in an
//!   environment variable `LOBSTER_REF_<n>` and the line refers to it as
//!   `"${LOBSTER_REF_<n>}"`, quoted for the shell context it sits in (bare,
//!   inside `"…"`, or inside `'…'`). The shell expands it as data: no value
//!   can add shell syntax.
//! - [`Style::Dsl`] (`pipeline:` text): values become one double-quoted DSL
//!   token each (`"`, `\`, `$` and backquote escaped), so they cannot add
//!   stages or flags.
//! - [`Style::Raw`] (paths, prompts, `workflow_args`, non-ref `stdin`): the
//!   value's text.
//! - [`Style::Env`] (`env:` values): raw, and `$NAME`/`${NAME}` in the
//!   literal text expand from the step environment built so far (no shell).

use crate::value::{get_path, js_to_string, to_js_json, Item};
use serde_json::Map;
use std::collections::BTreeMap;

/// A piece of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Literal text.
    Lit(String),
    /// `${name}`.
    Arg { name: String, raw: String },
    /// `$id.path` (the path is greedy, as in the reference).
    Ref {
        id: String,
        path: String,
        raw: String,
    },
}

/// What templates are resolved against.
pub trait Scope {
    /// A workflow arg, if given.
    fn arg(&self, name: &str) -> Option<&Item>;
    /// A step result object (`{id, stdout?, json?, approved?, …}`), if known.
    fn result(&self, id: &str) -> Option<&Item>;
}

/// Args and results in plain maps.
pub struct MapScope<'a> {
    pub args: &'a Map<String, Item>,
    pub results: &'a Map<String, Item>,
    /// Loop variables and other scoped results, looked up first.
    pub extra: Option<&'a Map<String, Item>>,
}

impl Scope for MapScope<'_> {
    fn arg(&self, name: &str) -> Option<&Item> {
        self.args.get(name)
    }
    fn result(&self, id: &str) -> Option<&Item> {
        self.extra
            .and_then(|e| e.get(id))
            .or_else(|| self.results.get(id))
    }
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Split `text` into pieces.
pub fn pieces(text: &str) -> Vec<Piece> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            if let Some((piece, used)) = piece_at(&chars[i..]) {
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(piece);
                i += used;
                continue;
            }
        }
        lit.push(chars[i]);
        i += 1;
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    out
}

fn piece_at(c: &[char]) -> Option<(Piece, usize)> {
    if c.get(1) == Some(&'{') {
        let mut j = 2;
        while j < c.len() && is_id_char(c[j]) {
            j += 1;
        }
        if j > 2 && c.get(j) == Some(&'}') {
            let raw: String = c[..=j].iter().collect();
            return Some((
                Piece::Arg {
                    name: c[2..j].iter().collect(),
                    raw,
                },
                j + 1,
            ));
        }
        return None;
    }
    let mut j = 1;
    while j < c.len() && is_id_char(c[j]) {
        j += 1;
    }
    if j == 1 || c.get(j) != Some(&'.') {
        return None;
    }
    let id: String = c[1..j].iter().collect();
    let mut k = j + 1;
    let mut end = j;
    loop {
        let start = k;
        while k < c.len() && is_path_char(c[k]) {
            k += 1;
        }
        if k == start {
            break;
        }
        end = k;
        if c.get(k) == Some(&'.') && c.get(k + 1).is_some_and(|&x| is_path_char(x)) {
            k += 1;
        } else {
            break;
        }
    }
    if end == j {
        return None;
    }
    Some((
        Piece::Ref {
            id,
            path: c[j + 1..end].iter().collect(),
            raw: c[..end].iter().collect(),
        },
        end,
    ))
}

/// If `text` is exactly one step reference (`^\$id.path$`), its id and path.
pub fn exact_ref(text: &str) -> Option<(String, String)> {
    match pieces(text).as_slice() {
        [Piece::Ref { id, path, .. }] => Some((id.clone(), path.clone())),
        _ => None,
    }
}

/// Every `$id.path` in `text`.
pub fn refs(text: &str) -> Vec<(String, String)> {
    pieces(text)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Ref { id, path, .. } => Some((id, path)),
            _ => None,
        })
        .collect()
}

/// How a value reads in text: strings raw, numbers and booleans via
/// `String()`, anything else as JSON; a missing `approved`/`skipped` is
/// `false`, other missing values are empty.
pub fn value_text(v: Option<&Item>, path: &str) -> String {
    match v {
        None => {
            if path == "approved" || path == "skipped" {
                "false".into()
            } else {
                String::new()
            }
        }
        Some(Item::String(s)) => s.clone(),
        Some(v @ (Item::Number(_) | Item::Bool(_))) => js_to_string(Some(v)),
        Some(other) => to_js_json(other),
    }
}

/// Look up `$id.path`; `None` when the id is unknown (left as written).
pub fn lookup<'a>(scope: &'a dyn Scope, id: &str, path: &str) -> Option<Option<&'a Item>> {
    scope.result(id).map(|r| get_path(r, path))
}

/// Where a rendered template goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Raw,
    Shell,
    Dsl,
    Env,
}

/// A rendered template and, for [`Style::Shell`], the variables it refers to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub env: Vec<(String, String)>,
    /// Set when a value cannot be placed safely (a reference inside a
    /// quoted here-document, where the shell expands nothing).
    pub problem: Option<String>,
}

/// Render `text` for `style`. `env` is only read by [`Style::Env`].
pub fn render(
    text: &str,
    scope: &dyn Scope,
    style: Style,
    env: Option<&BTreeMap<String, String>>,
) -> Rendered {
    let mut out = Rendered::default();
    let mut quote = Quote::None;
    let mut sh = ShellScan::default();
    for piece in pieces(text) {
        let value: Option<String> = match &piece {
            Piece::Lit(s) => {
                match style {
                    Style::Shell => sh.feed(s),
                    Style::Dsl => quote = track_dsl_quotes(s, quote),
                    _ => {}
                }
                if style == Style::Env {
                    out.text.push_str(&expand_vars(s, env));
                } else {
                    out.text.push_str(s);
                }
                continue;
            }
            Piece::Arg { name, .. } => scope.arg(name).map(|v| js_to_string(Some(v))),
            Piece::Ref { id, path, .. } => lookup(scope, id, path).map(|v| value_text(v, path)),
        };
        let Some(value) = value else {
            let raw = match &piece {
                Piece::Arg { raw, .. } | Piece::Ref { raw, .. } => raw.clone(),
                Piece::Lit(_) => unreachable!(),
            };
            match style {
                Style::Shell => sh.feed(&raw),
                Style::Env => {
                    out.text.push_str(&expand_vars(&raw, env));
                    continue;
                }
                _ => {}
            }
            out.text.push_str(&raw);
            continue;
        };
        match style {
            Style::Raw | Style::Env => out.text.push_str(&value),
            Style::Shell => {
                let name = format!("LOBSTER_REF_{}", out.env.len() + 1);
                let reference = match sh.context() {
                    ShellContext::Bare => format!("\"${{{name}}}\""),
                    ShellContext::Double | ShellContext::HereDoc => format!("${{{name}}}"),
                    ShellContext::Single => format!("'\"${{{name}}}\"'"),
                    ShellContext::QuotedHereDoc => {
                        out.problem.get_or_insert_with(|| {
                            format!("{} cannot be used inside a quoted here-document (<<'EOF'): the shell expands nothing there; use an unquoted delimiter or stdin", piece_raw(&piece))
                        });
                        format!("${{{name}}}")
                    }
                };
                out.text.push_str(&reference);
                sh.feed_opaque(&reference);
                out.env.push((name, value));
            }
            Style::Dsl => {
                let escaped = dsl_escape(&value);
                out.text.push_str(&match quote {
                    Quote::Double => escaped,
                    Quote::None => format!("\"{escaped}\""),
                    Quote::Single => format!("'\"{escaped}\"'"),
                });
            }
        }
    }
    out
}

fn piece_raw(p: &Piece) -> &str {
    match p {
        Piece::Lit(s) => s,
        Piece::Arg { raw, .. } | Piece::Ref { raw, .. } => raw,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Quote {
    #[default]
    None,
    Single,
    Double,
}

/// Where in shell text a substituted value lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellContext {
    Bare,
    Single,
    Double,
    /// The body of `<<EOF` (variables expand, quotes are literal).
    HereDoc,
    /// The body of `<<'EOF'` (nothing expands).
    QuotedHereDoc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HereDoc {
    delim: String,
    quoted: bool,
    strip_tabs: bool,
}

/// A POSIX sh scanner that knows the quoting context at every point:
/// quotes, backslash escapes and here-document bodies.
#[derive(Debug, Default)]
struct ShellScan {
    quote: Quote,
    escaped: bool,
    /// The current line so far.
    line: String,
    /// Byte offsets in `line` just after each unquoted `<<`.
    ops: Vec<usize>,
    /// Here-documents whose bodies start after the current line.
    queued: std::collections::VecDeque<HereDoc>,
    body: Option<HereDoc>,
}

impl ShellScan {
    fn context(&self) -> ShellContext {
        match (&self.body, self.quote) {
            (Some(h), _) if h.quoted => ShellContext::QuotedHereDoc,
            (Some(_), _) => ShellContext::HereDoc,
            (None, Quote::None) => ShellContext::Bare,
            (None, Quote::Single) => ShellContext::Single,
            (None, Quote::Double) => ShellContext::Double,
        }
    }

    /// Text that is part of the line but has no quoting effect.
    fn feed_opaque(&mut self, s: &str) {
        self.line.push_str(s);
    }

    fn feed(&mut self, s: &str) {
        for c in s.chars() {
            self.step(c);
        }
    }

    fn step(&mut self, c: char) {
        if self.body.is_some() {
            if c == '\n' {
                let done = self.body.as_ref().is_some_and(|h| {
                    let line = if h.strip_tabs {
                        self.line.trim_start_matches('\t')
                    } else {
                        self.line.as_str()
                    };
                    line == h.delim
                });
                if done {
                    self.body = self.queued.pop_front();
                }
                self.line.clear();
            } else {
                self.line.push(c);
            }
            return;
        }
        if self.escaped {
            self.escaped = false;
            self.line.push(c);
            return;
        }
        match (self.quote, c) {
            (Quote::None | Quote::Double, '\\') => self.escaped = true,
            (Quote::None, '\'') => self.quote = Quote::Single,
            (Quote::None, '"') => self.quote = Quote::Double,
            (Quote::Single, '\'') | (Quote::Double, '"') => self.quote = Quote::None,
            (Quote::None, '<') if self.line.ends_with('<') && !self.line.ends_with("<<") => {
                self.ops.push(self.line.len() + 1);
            }
            (Quote::None, '\n') => {
                self.end_line();
                return;
            }
            _ => {}
        }
        self.line.push(c);
    }

    /// A line ended outside quotes: queue its here-documents and start the
    /// first body.
    fn end_line(&mut self) {
        for &at in &self.ops {
            let rest = &self.line[at..];
            if rest.starts_with('<') {
                continue; // `<<<` is not a here-document
            }
            let strip_tabs = rest.starts_with('-');
            let rest = rest.trim_start_matches('-').trim_start();
            let word: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && !";|&<>()".contains(*c))
                .collect();
            if word.is_empty() {
                continue;
            }
            let quoted = word.contains(['\'', '"', '\\']);
            let delim: String = word.chars().filter(|c| !"'\"\\".contains(*c)).collect();
            self.queued.push_back(HereDoc {
                delim,
                quoted,
                strip_tabs,
            });
        }
        self.ops.clear();
        self.line.clear();
        self.body = self.queued.pop_front();
    }
}

/// Lobster DSL quoting state after `s` (`\'` escapes inside single quotes).
fn track_dsl_quotes(s: &str, mut q: Quote) -> Quote {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (q, c) {
            (Quote::Single, '\\') | (Quote::Double, '\\') => {
                chars.next();
            }
            (Quote::None, '\'') => q = Quote::Single,
            (Quote::None, '"') => q = Quote::Double,
            (Quote::Single, '\'') => q = Quote::None,
            (Quote::Double, '"') => q = Quote::None,
            _ => {}
        }
    }
    q
}

fn dsl_escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    for c in v.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// `$NAME` / `${NAME}` from `env` (missing: empty), no other shell syntax.
fn expand_vars(s: &str, env: Option<&BTreeMap<String, String>>) -> String {
    let Some(env) = env else {
        return s.to_string();
    };
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    while i < chars.len() {
        if chars[i] == '$' {
            let braced = chars.get(i + 1) == Some(&'{');
            let start = if braced { i + 2 } else { i + 1 };
            let mut j = start;
            while j < chars.len() && name_char(chars[j]) {
                j += 1;
            }
            let first_ok = chars
                .get(start)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_');
            if first_ok && (!braced || chars.get(j) == Some(&'}')) {
                let name: String = chars[start..j].iter().collect();
                out.push_str(env.get(&name).map(String::as_str).unwrap_or(""));
                i = if braced { j + 1 } else { j };
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope_with<'a>(args: &'a Map<String, Item>, results: &'a Map<String, Item>) -> MapScope<'a> {
        MapScope {
            args,
            results,
            extra: None,
        }
    }

    #[test]
    fn splits_args_and_greedy_refs() {
        assert_eq!(
            pieces("a ${x} $s.json.0.name. $HOME $b.stdout.txt"),
            vec![
                Piece::Lit("a ".into()),
                Piece::Arg {
                    name: "x".into(),
                    raw: "${x}".into()
                },
                Piece::Lit(" ".into()),
                Piece::Ref {
                    id: "s".into(),
                    path: "json.0.name".into(),
                    raw: "$s.json.0.name".into()
                },
                Piece::Lit(". $HOME ".into()),
                Piece::Ref {
                    id: "b".into(),
                    path: "stdout.txt".into(),
                    raw: "$b.stdout.txt".into()
                },
            ]
        );
        assert_eq!(exact_ref("$a.json"), Some(("a".into(), "json".into())));
        assert_eq!(exact_ref(" $a.json"), None);
    }

    #[test]
    fn shell_style_never_pastes_values() {
        let args = json!({"who": "x; rm -rf /"}).as_object().unwrap().clone();
        let results = json!({"a": {"id":"a","stdout":"; touch pwned\n"}})
            .as_object()
            .unwrap()
            .clone();
        let s = scope_with(&args, &results);
        let r = render(
            "echo ${who} \"in $a.stdout\" 'q $a.stdout' $HOME.json ${nope}",
            &s,
            Style::Shell,
            None,
        );
        assert_eq!(
            r.text,
            "echo \"${LOBSTER_REF_1}\" \"in ${LOBSTER_REF_2}\" 'q '\"${LOBSTER_REF_3}\"'' $HOME.json ${nope}"
        );
        assert_eq!(r.env[0], ("LOBSTER_REF_1".into(), "x; rm -rf /".into()));
        assert_eq!(r.env[1].1, "; touch pwned\n");
        let r = render(
            "cat <<EOF > out\nv=$a.stdout\nEOF\necho $a.stdout\ncat <<-'END'\n\t$a.stdout\n\tEND\n",
            &s,
            Style::Shell,
            None,
        );
        assert_eq!(
            r.text,
            "cat <<EOF > out\nv=${LOBSTER_REF_1}\nEOF\necho \"${LOBSTER_REF_2}\"\ncat <<-'END'\n\t${LOBSTER_REF_3}\n\tEND\n"
        );
        assert!(r
            .problem
            .unwrap()
            .starts_with("$a.stdout cannot be used inside a quoted here-document"));
        let r = render(
            "x=\"a\\\"b $a.stdout\" ; echo 'it''s' $a.stdout",
            &s,
            Style::Shell,
            None,
        );
        assert_eq!(
            r.text,
            "x=\"a\\\"b ${LOBSTER_REF_1}\" ; echo 'it''s' \"${LOBSTER_REF_2}\""
        );
    }

    #[test]
    fn raw_dsl_and_env_styles() {
        let args = json!({"n": 3, "o": {"a":1}, "l": [1,2]})
            .as_object()
            .unwrap()
            .clone();
        let results = json!({"a": {"id":"a","json":{"k":"v\"$"}}})
            .as_object()
            .unwrap()
            .clone();
        let s = scope_with(&args, &results);
        assert_eq!(
            render(
                "${n} ${o} ${l} $a.json $a.approved $a.nope",
                &s,
                Style::Raw,
                None
            )
            .text,
            "3 [object Object] 1,2 {\"k\":\"v\\\"$\"} false "
        );
        assert_eq!(
            render("head --n ${n} | map x=$a.json.k", &s, Style::Dsl, None).text,
            "head --n \"3\" | map x=\"v\\\"\\$\""
        );
        let env: BTreeMap<String, String> = [("LOBSTER_ARG_N".to_string(), "3".to_string())].into();
        assert_eq!(
            render(
                "$LOBSTER_ARG_N-${LOBSTER_ARG_N}-$MISSING-${n}",
                &s,
                Style::Env,
                Some(&env)
            )
            .text,
            "3-3--3"
        );
    }
}
