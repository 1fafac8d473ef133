//! `table`: render items as a plain-text table (or one line per item).

use super::js::{js_keys, js_prop, utf16_len};
use super::{collect, Command, Example, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::Result;
use crate::kernel::Context;
use crate::value::{js_to_string, to_js_json};
use serde_json::Value;

/// `table`.
pub struct Table;

const HELP: &str = "table — render items as a simple table\n\nUsage:\n  ... | table\n\nNotes:\n  - If items are objects, columns are union of keys (first 20 items).\n";

/// table.ts `stringifyCell`.
fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => js_to_string(Some(v)),
        Some(v) => to_js_json(v),
    }
}

fn pad_end(s: &str, width: usize) -> String {
    let len = utf16_len(s);
    let mut out = s.to_string();
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
    out
}

/// The text the reference writes to stdout.
fn render(items: &[Value]) -> String {
    if items.is_empty() {
        return "(no results)\n".into();
    }
    let sample = &items[..items.len().min(20)];
    let mut out = String::new();
    if !sample.iter().all(Value::is_object) {
        for item in items {
            out.push_str(&cell(Some(item)));
            out.push('\n');
        }
        return out;
    }
    let mut cols: Vec<String> = Vec::new();
    for obj in sample.iter().filter_map(Value::as_object) {
        for k in js_keys(obj) {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    let mut rows: Vec<Vec<String>> = vec![cols.clone()];
    for item in items {
        rows.push(
            cols.iter()
                .map(|c| cell(js_prop(item, c).as_deref()))
                .collect(),
        );
    }
    for row in &mut rows {
        for c in row.iter_mut() {
            *c = c.replace('\n', " ");
        }
    }
    let widths: Vec<usize> = (0..cols.len())
        .map(|i| {
            rows.iter()
                .map(|r| utf16_len(&r[i]))
                .max()
                .unwrap_or(0)
                .max(3)
        })
        .collect();
    let render_row = |row: &[String]| -> String {
        row.iter()
            .zip(&widths)
            .map(|(c, w)| pad_end(c, *w))
            .collect::<Vec<_>>()
            .join("  ")
    };
    out.push_str(&render_row(&rows[0]));
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.push('\n');
    for row in &rows[1..] {
        out.push_str(&render_row(row));
        out.push('\n');
    }
    out
}

impl Command for Table {
    fn signature(&self) -> Signature {
        Signature {
            name: "table",
            description: "Render items as a simple table",
            flags: &[],
            positional: None,
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "objects: union of keys, padded columns (trailing spaces kept)",
                pipeline: "table",
                input: r#"[{"id": 1, "title": "hello"}, {"id": 22, "extra": null, "title": {"a": 1}}]"#,
                output: r#""id   title    extra\n---  -------  -----\n1    hello         \n22   {\"a\":1}       \n""#,
            },
            Example {
                description: "non-objects: one line per item",
                pipeline: "table",
                input: r#"["a\nb", 1, null, [1, 2]]"#,
                output: r#""a\nb\n1\n\n[1,2]\n""#,
            },
            Example {
                description: "empty input",
                pipeline: "table",
                input: "[]",
                output: r#""(no results)\n""#,
            },
        ]
    }

    fn run(&self, _args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let items = collect(input)?;
        let text = render(&items);
        Ok(Output::Rendered { text, items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&Table);
    }

    #[test]
    fn newlines_in_cells_become_spaces_and_width_counts_utf16() {
        let text = render(&[json!({"k": "a\nb", "e": "\u{1f600}"})]);
        assert_eq!(text, "k    e  \n---  ---\na b  \u{1f600} \n");
    }

    #[test]
    fn only_the_first_twenty_items_choose_columns() {
        let mut items: Vec<Value> = (0..20).map(|i| json!({"a": i})).collect();
        items.push(json!({"a": 20, "late": 1}));
        items.push(json!("str"));
        let text = render(&items);
        assert!(!text.contains("late"));
        assert!(text.ends_with("20 \n   \n"));
    }

    #[test]
    fn integer_keys_come_first() {
        let text = render(&[json!({"b": 1, "1": 2})]);
        assert!(text.starts_with("1    b  \n"));
    }
}
