//! `template`: render `{{path | filter …}}` placeholders against each item. Lazy.

use super::filters::{apply_filters, check_filter_names, JsVal};
use super::js::{dot_path, flag_string, js_trim};
use super::{Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::Item;
use serde_json::Value;
use std::borrow::Cow;

/// `template --text '…'` / `--file path` / positional text.
pub struct Template;

const HELP: &str = "template — render a simple template against each item\n\nUsage:\n  ... | template --text 'PR {{number}}: {{title}}'\n  ... | template --file ./draft.txt\n\nTemplate syntax:\n  - {{field}} or {{nested.field}}\n  - {{.}} for the whole item\n  - {{field | filter}} with pipe-based filters\n  - Missing values render as empty string\n\nFilters:\n  upper, lower, trim, truncate N, replace \"from\" \"to\", split sep\n  first, last, length, join sep\n  json, string, default val, round N, date fmt\n";

const MISSING: &str = "template requires --text or --file (or positional text)";

/// Replace every match of `\{\{\s*([^}]+?)\s*\}\}` with `f(trimmed expression)`.
pub(crate) fn replace_placeholders(
    tpl: &str,
    mut f: impl FnMut(&str) -> Result<String>,
) -> Result<String> {
    let mut out = String::with_capacity(tpl.len());
    let mut rest = tpl;
    while let Some(start) = rest.find("{{") {
        let body = &rest[start + 2..];
        // The expression cannot contain `}`; it must be non-empty and be
        // followed by `}}`.
        let matched = body
            .find('}')
            .filter(|&close| close > 0 && body[close + 1..].starts_with('}'));
        match matched {
            Some(close) => {
                out.push_str(&rest[..start]);
                out.push_str(&f(js_trim(&body[..close]))?);
                rest = &body[close + 2..];
            }
            None => {
                // No match here; the regex retries one character later.
                out.push_str(&rest[..start + 1]);
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Split on `|` outside single or double quotes (quotes and escapes kept).
pub(crate) fn split_filter_chain(expr: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = expr.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '"' | '\'' => {
                current.push(ch);
                while let Some(c) = chars.next() {
                    current.push(c);
                    if c == ch {
                        break;
                    }
                    if c == '\\' {
                        if let Some(esc) = chars.next() {
                            current.push(esc);
                        }
                    }
                }
            }
            '|' => {
                parts.push(js_trim(&current).to_string());
                current.clear();
            }
            _ => current.push(ch),
        }
    }
    parts.push(js_trim(&current).to_string());
    parts
}

/// template.ts `getByPath`.
fn lookup<'a>(item: &'a Item, path: &str) -> Option<Cow<'a, Value>> {
    if path == "." || path == "this" {
        return Some(Cow::Borrowed(item));
    }
    dot_path(item, path)
}

/// Render one template against one item.
pub(crate) fn render_template(tpl: &str, item: &Item) -> Result<String> {
    replace_placeholders(tpl, |expr| {
        let parts = split_filter_chain(expr);
        let key = parts.first().map(String::as_str).unwrap_or("");
        let mut val = JsVal::from_option(lookup(item, key).map(Cow::into_owned));
        if parts.len() > 1 {
            val = apply_filters(val, &parts[1..])?;
        }
        Ok(val.to_template_text())
    })
}

impl Template {
    /// The template text that is known without reading files.
    fn inline_text(args: &Args) -> Option<String> {
        if let Some(t) = flag_string(args, "text") {
            return Some(t.to_string());
        }
        if flag_string(args, "file").is_some() {
            return None;
        }
        let joined = args.positional.join(" ");
        (!joined.is_empty()).then_some(joined)
    }

    fn text(args: &Args, ctx: &Context) -> Result<String> {
        if let Some(t) = flag_string(args, "text") {
            return Ok(t.to_string());
        }
        if let Some(file) = flag_string(args, "file") {
            let text = read_template_file(&ctx.cwd.join(file), file)?;
            if !text.is_empty() {
                return Ok(text);
            }
        }
        let joined = args.positional.join(" ");
        if joined.is_empty() {
            return Err(Error::runtime(MISSING));
        }
        Ok(joined)
    }
}

/// Read a template file as UTF-8; errors read like Node's.
fn read_template_file(path: &std::path::Path, shown: &str) -> Result<String> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            let msg = match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("ENOENT: no such file or directory, open '{shown}'")
                }
                std::io::ErrorKind::PermissionDenied => {
                    format!("EACCES: permission denied, open '{shown}'")
                }
                _ if path.is_dir() => "EISDIR: illegal operation on a directory, read".to_string(),
                _ => format!("{e}, open '{shown}'"),
            };
            Err(Error::runtime(msg))
        }
    }
}

impl Command for Template {
    fn signature(&self) -> Signature {
        Signature {
            name: "template",
            description: "Render a simple {{path}} template against each input item",
            flags: &[
                FlagSpec {
                    name: "text",
                    value: Some("tpl"),
                    kind: super::FlagType::Text,
                    description: "Template text (supports {{path}}, {{path | filter}}, {{.}} for the whole item)",
                },
                FlagSpec {
                    name: "file",
                    value: Some("path"),
                    kind: super::FlagType::Text,
                    description: "Template file path",
                },
            ],
            positional: Some("Template text when neither --text nor --file is given"),
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "fields, nested fields, missing values and the whole item",
                pipeline: "template --text 'PR {{number}}: {{ title }} by {{user.login}}{{missing}} {{.}}'",
                input: r#"[{"number": 5, "title": "Fix", "user": {"login": "ann"}}, 7]"#,
                output: r#"["PR 5: Fix by ann {\"number\":5,\"title\":\"Fix\",\"user\":{\"login\":\"ann\"}}", "PR :  by  7"]"#,
            },
            Example {
                description: "filters chain left to right",
                pipeline: r#"template --text '{{name | trim | upper}} {{tags | join "+"}} {{missing | default "N/A"}} {{n | round 1}}'"#,
                input: r#"[{"name": "  bob ", "tags": ["a", "b"], "n": 2.25}]"#,
                output: r#"["BOB a+b N/A 2.3"]"#,
            },
            Example {
                description: "positional text; null renders empty, booleans as text",
                pipeline: "template ok={{ok}} v={{v}}",
                input: r#"[{"ok": true, "v": null}]"#,
                output: r#"["ok=true v="]"#,
            },
            Example {
                description: "empty input renders nothing",
                pipeline: "template --text '{{x}}'",
                input: "[]",
                output: "[]",
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        match Self::inline_text(args) {
            Some(text) => check_template(&text),
            None if flag_string(args, "file").is_some() => Ok(()),
            None => Err(Error::runtime(MISSING)),
        }
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let tpl = Self::text(args, ctx)?;
        Ok(Output::Items(Box::new(input.map(move |item| {
            let item = item?;
            render_template(&tpl, &item).map(Value::String)
        }))))
    }
}

/// Reject unknown filter names before any stage runs.
fn check_template(tpl: &str) -> Result<()> {
    replace_placeholders(tpl, |expr| {
        let parts = split_filter_chain(expr);
        check_filter_names(parts.get(1..).unwrap_or(&[]))?;
        Ok(String::new())
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&Template);
    }

    fn r(tpl: &str, item: Value) -> String {
        render_template(tpl, &item).unwrap()
    }

    #[test]
    fn placeholder_scanning_matches_the_regex() {
        let item = json!({"a": 1, "{a": 2});
        assert_eq!(r("{{a}}", item.clone()), "1");
        assert_eq!(r("{{}}{{a}", item.clone()), "{{}}{{a}");
        assert_eq!(r("{{{a}}", item.clone()), "2");
        assert_eq!(r("{{a}x}}", item.clone()), "{{a}x}}");
        assert_eq!(r("{{ }}", json!(3)), "3");
        assert_eq!(r("{{this}}-{{ . }}", json!("s")), "s-s");
        assert_eq!(r("{{a.b.c}}", item), "");
    }

    #[test]
    fn filter_chain_splits_outside_quotes() {
        assert_eq!(
            split_filter_chain(r#"line | split "|" | first"#),
            vec!["line", "split \"|\"", "first"]
        );
        assert_eq!(
            split_filter_chain(r#"x | replace 'a\'|' b"#),
            vec!["x", r#"replace 'a\'|' b"#]
        );
        assert_eq!(
            r(r#"{{line | split "|" | first}}"#, json!({"line": "a|b"})),
            "a"
        );
    }

    #[test]
    fn unknown_filters_fail_validation() {
        let err = check_template("{{a | nope 1}}").unwrap_err();
        assert_eq!(err.to_string(), "Unknown template filter: nope");
        assert!(check_template("{{a | upper}} {{b}}").is_ok());
        let err = render_template("{{a | }}", &json!({})).unwrap_err();
        assert_eq!(err.to_string(), "Unknown template filter: ");
    }

    #[test]
    fn text_is_required() {
        let err = Template.validate(&Args::default()).unwrap_err();
        assert_eq!(err.to_string(), MISSING);
    }

    #[test]
    fn reads_template_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.txt"), "Hi {{who}}\n").unwrap();
        let mut ctx = crate::commands::test_context(
            crate::kernel::Mode::Tool,
            crate::state::StateStore::new(dir.path()),
        );
        ctx.cwd = dir.path().to_path_buf();
        let args = Args {
            positional: vec![],
            flags: vec![("file".into(), crate::dsl::FlagValue::Str("t.txt".into()))],
        };
        assert_eq!(Template::text(&args, &ctx).unwrap(), "Hi {{who}}\n");
        let args = Args {
            positional: vec![],
            flags: vec![("file".into(), crate::dsl::FlagValue::Str("no.txt".into()))],
        };
        let err = Template::text(&args, &ctx).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ENOENT: no such file or directory, open 'no.txt'"
        );
    }
}
