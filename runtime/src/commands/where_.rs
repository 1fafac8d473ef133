//! `where`: keep items whose field satisfies a predicate, with JavaScript's
//! loose `==`/`<` coercions (as the reference). Lazy.

use super::js::{array_index, is_js_space, js_trim};
use super::{Command, Example, ItemStream, LazyStream, Output, Signature};
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::{
    js_less_than, js_loose_eq, js_to_number, string_to_number, Field, FieldPath, Item, Lazy,
};
use serde_json::Value;
use std::borrow::Cow;

/// `where <path><op><value>`.
pub struct Where;

const HELP: &str = "where — filter objects by a simple predicate\n\nUsage:\n  ... | where unread=true\n  ... | where minutes>=30\n  ... | where sender.domain==example.com\n";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The right-hand side: numbers are kept as `f64` so `Infinity` works.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Number(f64),
    Other(Value),
}

#[derive(Debug, Clone, PartialEq)]
struct Predicate {
    path: String,
    op: Op,
    value: Literal,
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// `^([a-zA-Z0-9_.]+)\s*(==|=|!=|<=|>=|<|>)\s*(.+)$`, with the regex's backtracking.
fn parse_predicate(expr: &str) -> Result<Predicate> {
    let invalid = || Error::runtime(format!("Invalid where expression: {expr}"));
    let path_len = expr
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(expr.len());
    if path_len == 0 {
        return Err(invalid());
    }
    let path = &expr[..path_len];
    let rest = expr[path_len..].trim_start_matches(is_js_space);
    const OPS: [(&str, Op); 7] = [
        ("==", Op::Eq),
        ("=", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    for (text, op) in OPS {
        let Some(after) = rest.strip_prefix(text) else {
            continue;
        };
        // `\s*` is greedy but gives characters back so that `.+` can match.
        let ws_end = after.len() - after.trim_start_matches(is_js_space).len();
        let mut cuts: Vec<usize> = after[..ws_end].char_indices().map(|(i, _)| i).collect();
        cuts.push(ws_end);
        for &cut in cuts.iter().rev() {
            let raw = &after[cut..];
            if !raw.is_empty() && !raw.contains(is_line_terminator) {
                return Ok(Predicate {
                    path: path.to_string(),
                    op,
                    value: literal(raw),
                });
            }
        }
    }
    Err(invalid())
}

fn literal(raw: &str) -> Literal {
    match raw {
        "true" => Literal::Other(Value::Bool(true)),
        "false" => Literal::Other(Value::Bool(false)),
        "null" => Literal::Other(Value::Null),
        _ => {
            let n = string_to_number(raw);
            if !n.is_nan() && !js_trim(raw).is_empty() {
                Literal::Number(n)
            } else {
                Literal::Other(Value::String(raw.to_string()))
            }
        }
    }
}

/// where.ts `getPath`: undefined as soon as a non-object is reached.
fn where_path<'a>(item: &'a Item, path: &str) -> Option<Cow<'a, Value>> {
    let mut cur: Cow<'a, Value> = Cow::Borrowed(item);
    for seg in path.split('.') {
        // Borrowed all the way down; only an array's `length` is computed,
        // and a number has no further segments.
        let Cow::Borrowed(value) = cur else {
            return None;
        };
        cur = match value {
            Value::Object(map) => Cow::Borrowed(map.get(seg)?),
            Value::Array(items) => {
                if seg == "length" {
                    Cow::Owned(Value::from(items.len() as u64))
                } else {
                    Cow::Borrowed(items.get(array_index(seg)?)?)
                }
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// JavaScript `left < right` where `right` is a number (numeric comparison).
fn less_num(left: f64, right: f64) -> Option<bool> {
    if left.is_nan() || right.is_nan() {
        None
    } else {
        Some(left < right)
    }
}

fn matches(left: Option<&Value>, op: Op, right: &Literal) -> bool {
    match right {
        Literal::Number(r) => {
            let l = js_to_number(left);
            let absent = matches!(left, None | Some(Value::Null));
            match op {
                Op::Eq => !absent && l == *r,
                Op::Ne => absent || l != *r,
                Op::Lt => less_num(l, *r) == Some(true),
                Op::Gt => less_num(*r, l) == Some(true),
                Op::Le => less_num(*r, l) == Some(false),
                Op::Ge => less_num(l, *r) == Some(false),
            }
        }
        Literal::Other(r) => {
            let r = Some(r);
            match op {
                Op::Eq => js_loose_eq(left, r),
                Op::Ne => !js_loose_eq(left, r),
                Op::Lt => js_less_than(left, r) == Some(true),
                Op::Gt => js_less_than(r, left) == Some(true),
                Op::Le => js_less_than(r, left) == Some(false),
                Op::Ge => js_less_than(left, r) == Some(false),
            }
        }
    }
}

impl Where {
    fn predicate(args: &Args) -> Result<Predicate> {
        match args.positional.first() {
            Some(expr) if !expr.is_empty() => parse_predicate(expr),
            _ => Err(Error::runtime(
                "where requires an expression (e.g. field=value)",
            )),
        }
    }
}

impl Command for Where {
    fn signature(&self) -> Signature {
        Signature {
            name: "where",
            description: "Filter objects by a simple predicate",
            flags: &[],
            positional: Some(
                "First positional arg is an expression like field=value or minutes>=30",
            ),
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "loose equality: 1 matches \"1\", 1 and true",
                pipeline: "where x==1",
                input: r#"[{"x": "1"}, {"x": 1}, {"x": true}, {"x": 2}, {}]"#,
                output: r#"[{"x": "1"}, {"x": 1}, {"x": true}]"#,
            },
            Example {
                description: "a missing field equals null",
                pipeline: "where a.b==null",
                input: r#"[{"a": {"b": null}}, {"a": 1}, {"a": {"b": 0}}]"#,
                output: r#"[{"a": {"b": null}}, {"a": 1}]"#,
            },
            Example {
                description: "null is less than 10; a missing field is not",
                pipeline: "where n<10",
                input: r#"[{"n": null}, {"n": "9"}, {"n": 10}, {}]"#,
                output: r#"[{"n": null}, {"n": "9"}]"#,
            },
            Example {
                description: "strings compare as strings",
                pipeline: "where sender.domain==example.com",
                input: r#"[{"sender": {"domain": "example.com"}}, {"sender": "example.com"}]"#,
                output: r#"[{"sender": {"domain": "example.com"}}]"#,
            },
            Example {
                description: "empty input",
                pipeline: "where minutes>=30",
                input: "[]",
                output: "[]",
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::predicate(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let pred = Self::predicate(args)?;
        Ok(Output::Items(Box::new(input.filter(
            move |item| match item {
                Ok(item) => {
                    let left = where_path(item, &pred.path);
                    matches(left.as_deref(), pred.op, &pred.value)
                }
                Err(_) => true,
            },
        ))))
    }

    /// The same filter over unparsed items: only the field the predicate
    /// names is read, and the items pass on unparsed.
    fn run_lazy(
        &self,
        args: &Args,
        input: LazyStream,
        _limit: Option<usize>,
        _ctx: &Context,
    ) -> Result<Output> {
        let pred = Self::predicate(args)?;
        // Where each segment of the path starts (for the part after the
        // objects, read by `where_path` itself).
        let starts: Vec<usize> = std::iter::once(0)
            .chain(pred.path.match_indices('.').map(|(i, _)| i + 1))
            .collect();
        let field = FieldPath::new(pred.path.split('.'));
        Ok(Output::Lazy(Box::new(input.filter(move |item| {
            let lazy = match item {
                Ok(lazy) => lazy,
                Err(_) => return true,
            };
            match lazy {
                Lazy::Parsed(item) => {
                    let left = where_path(item, &pred.path);
                    matches(left.as_deref(), pred.op, &pred.value)
                }
                Lazy::Raw(raw) => match raw.field(&field) {
                    Field::Missing => matches(None, pred.op, &pred.value),
                    Field::Value { value, used } => match starts.get(used) {
                        None => matches(Some(&value), pred.op, &pred.value),
                        Some(&at) => {
                            let left = where_path(&value, &pred.path[at..]);
                            matches(left.as_deref(), pred.op, &pred.value)
                        }
                    },
                },
            }
        }))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&Where);
    }

    fn keep(expr: &str, item: Value) -> bool {
        let p = parse_predicate(expr).unwrap();
        matches(where_path(&item, &p.path).as_deref(), p.op, &p.value)
    }

    #[test]
    fn parses_like_the_regex() {
        let p = parse_predicate("a.b >= 30").unwrap();
        assert_eq!(p.path, "a.b");
        assert_eq!(p.op, Op::Ge);
        assert_eq!(p.value, Literal::Number(30.0));
        assert_eq!(
            parse_predicate("x=hello ").unwrap().value,
            Literal::Other(json!("hello "))
        );
        // `x==` backtracks to op `=` with value `=`.
        let p = parse_predicate("x==").unwrap();
        assert_eq!((p.op, p.value), (Op::Eq, Literal::Other(json!("="))));
        // `x== ` keeps the space as the value.
        assert_eq!(
            parse_predicate("x== ").unwrap().value,
            Literal::Other(json!(" "))
        );
        assert_eq!(
            parse_predicate("x<=").unwrap(),
            Predicate {
                path: "x".into(),
                op: Op::Lt,
                value: Literal::Other(json!("="))
            }
        );
        assert_eq!(
            parse_predicate("x=0x10").unwrap().value,
            Literal::Number(16.0)
        );
        assert_eq!(
            parse_predicate("x<Infinity").unwrap().value,
            Literal::Number(f64::INFINITY)
        );
        assert_eq!(
            parse_predicate("x= ").unwrap().value,
            Literal::Other(json!(" "))
        );
        for bad in ["x", "=1", "x y=1", "x==\n", "-x=1", "x=1\n2"] {
            let err = parse_predicate(bad).unwrap_err();
            assert_eq!(err.to_string(), format!("Invalid where expression: {bad}"));
        }
    }

    #[test]
    fn coercions_follow_javascript() {
        assert!(keep("x==1", json!({"x": "1"})));
        assert!(keep("x==1", json!({"x": true})));
        assert!(keep("x==1", json!({"x": [1]})));
        assert!(!keep("x==1", json!({"x": null})));
        assert!(keep("x!=1", json!({})));
        assert!(keep("x==true", json!({"x": true})));
        assert!(!keep("x==true", json!({"x": "true"})));
        assert!(keep("x==null", json!({})));
        assert!(keep("x<10", json!({"x": null})));
        assert!(!keep("x<10", json!({})));
        assert!(!keep("x>=10", json!({})));
        assert!(keep("x<=0", json!({"x": null})));
        assert!(keep("x<b", json!({"x": "a"})));
        assert!(!keep("x>10", json!({"x": "9a"})));
        assert!(keep("x<Infinity", json!({"x": 1e300})));
        assert!(keep("x>=abc", json!({"x": "abc"})));
        assert!(!keep("x.y==1", json!({"x": "1"})));
        assert!(keep("x.length==2", json!({"x": [0, 0]})));
        assert!(keep("x.1==b", json!({"x": ["a", "b"]})));
    }

    /// where, pick, map, template and dedupe pull nothing until pulled, and
    /// only as much as they are asked for.
    #[test]
    fn streaming_commands_stay_lazy() {
        use crate::dsl::parse;
        use crate::kernel::Mode;
        use crate::state::StateStore;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;

        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::commands::test_context(Mode::Tool, StateStore::new(dir.path()));
        for text in [
            "where x>=0",
            "pick x",
            "map --wrap w",
            "template --text '{{x}}'",
            "dedupe --key x",
        ] {
            let pulled = Arc::new(AtomicUsize::new(0));
            let counter = pulled.clone();
            let input: ItemStream = Box::new((0..).map(move |i| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(json!({ "x": i }))
            }));
            let pipeline = parse(text).unwrap();
            let stage = &pipeline.stages[0];
            let cmd = ctx.registry.get(&stage.name).unwrap();
            let Ok(Output::Items(mut out)) = cmd.run(&stage.args, input, &ctx) else {
                panic!("{text}: items expected")
            };
            assert_eq!(pulled.load(Ordering::SeqCst), 0, "{text}");
            assert!(out.next().is_some(), "{text}");
            assert!(out.next().is_some(), "{text}");
            assert_eq!(pulled.load(Ordering::SeqCst), 2, "{text}");
        }
    }

    #[test]
    fn missing_expression_is_an_error() {
        let err = Where.validate(&Args::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "where requires an expression (e.g. field=value)"
        );
    }
}
