//! `sort`: stable sort by a dot-path key or by the item itself.

use super::js::{dot_path, flag_string, flag_truthy};
use super::{collect, stream_of, Command, Example, FlagSpec, ItemStream, Output, Signature};
use crate::dsl::Args;
use crate::error::Result;
use crate::executor::Context;
use crate::value::{js_to_string, Item};
use serde_json::Value;
use std::cmp::Ordering;

/// `sort [--key path] [--desc]`.
pub struct Sort;

const HELP: &str = "sort — sort items (stable) by a key\n\nUsage:\n  ... | sort\n  ... | sort --key updatedAt\n  ... | sort --key prNumber --desc\n\nNotes:\n  - Sorting is stable (preserves order for equal keys).\n  - undefined/null keys sort last.\n";

/// The reference's comparator for two present, non-null values: numbers
/// numerically, everything else by `String()` in UTF-16 code-unit order.
fn compare_present(a: &Value, b: &Value) -> Ordering {
    if let (Value::Number(x), Value::Number(y)) = (a, b) {
        let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
        return x.partial_cmp(&y).unwrap_or(Ordering::Equal);
    }
    let (sa, sb) = (js_to_string(Some(a)), js_to_string(Some(b)));
    sa.encode_utf16().cmp(sb.encode_utf16())
}

/// null/undefined last in both directions; `desc` reverses the rest.
fn compare_keys(a: Option<&Value>, b: Option<&Value>, desc: bool) -> Ordering {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => {
            let c = compare_present(a, b);
            if desc {
                c.reverse()
            } else {
                c
            }
        }
    }
}

/// A stable merge sort that tolerates comparators that are not total orders
/// (mixed numbers and strings), where `slice::sort_by` may panic.
fn merge_sort<T: Clone>(items: &mut [T], cmp: &dyn Fn(&T, &T) -> Ordering) {
    let n = items.len();
    if n <= 1 {
        return;
    }
    let mid = n / 2;
    merge_sort(&mut items[..mid], cmp);
    merge_sort(&mut items[mid..], cmp);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if cmp(&items[j], &items[i]) == Ordering::Less {
            merged.push(items[j].clone());
            j += 1;
        } else {
            merged.push(items[i].clone());
            i += 1;
        }
    }
    merged.extend_from_slice(&items[i..mid]);
    merged.extend_from_slice(&items[j..n]);
    items.clone_from_slice(&merged);
}

/// Sort `items` as `sort --key key [--desc]` does.
fn sort_items(items: Vec<Item>, key: Option<&str>, desc: bool) -> Vec<Item> {
    let keys: Vec<Option<Value>> = items
        .iter()
        .map(|it| match key {
            Some(k) => dot_path(it, k).map(|v| v.into_owned()),
            None => Some(it.clone()),
        })
        .collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    merge_sort(&mut order, &|&a: &usize, &b: &usize| {
        compare_keys(keys[a].as_ref(), keys[b].as_ref(), desc)
    });
    let mut slots: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

impl Command for Sort {
    fn signature(&self) -> Signature {
        Signature {
            name: "sort",
            description: "Sort items (stable) by a key or by stringified value",
            flags: &[
                FlagSpec {
                    name: "key",
                    value: Some("path"),
                    description: "Dot-path key to sort by (e.g. updatedAt, pr.number)",
                },
                FlagSpec {
                    name: "desc",
                    value: None,
                    description: "Sort descending",
                },
            ],
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
                description: "numbers numerically, missing and null keys last",
                pipeline: "sort --key n",
                input: r#"[{"n": 10}, {"id": "x"}, {"n": 9}, {"n": null}, {"n": 9.5}]"#,
                output: r#"[{"n": 9}, {"n": 9.5}, {"n": 10}, {"id": "x"}, {"n": null}]"#,
            },
            Example {
                description: "descending still puts null/undefined last",
                pipeline: "sort --key n --desc",
                input: r#"[{"n": null}, {"n": 1}, {}, {"n": 3}]"#,
                output: r#"[{"n": 3}, {"n": 1}, {"n": null}, {}]"#,
            },
            Example {
                description: "mixed types compare as strings (UTF-16 order); ties keep input order",
                pipeline: "sort",
                input: r#"["b", 10, "B", true, "a", "b"]"#,
                output: r#"[10, "B", "a", "b", "b", true]"#,
            },
            Example {
                description: "empty input",
                pipeline: "sort --desc",
                input: "[]",
                output: "[]",
            },
        ]
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let key = flag_string(args, "key");
        let desc = flag_truthy(args.flag("desc"));
        let items = collect(input)?;
        Ok(Output::Items(stream_of(sort_items(items, key, desc))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples() {
        super::super::examples::check_examples(&Sort);
    }

    fn sorted(items: Value, key: Option<&str>, desc: bool) -> Value {
        let Value::Array(items) = items else {
            unreachable!()
        };
        Value::Array(sort_items(items, key, desc))
    }

    #[test]
    fn is_stable_and_handles_nested_keys() {
        let got = sorted(
            json!([{"p": {"n": 2}, "i": 0}, {"p": {"n": 1}}, {"p": {"n": 2}, "i": 1}, {"p": null}]),
            Some("p.n"),
            false,
        );
        assert_eq!(
            got,
            json!([{"p": {"n": 1}}, {"p": {"n": 2}, "i": 0}, {"p": {"n": 2}, "i": 1}, {"p": null}])
        );
    }

    #[test]
    fn objects_compare_as_object_object_and_utf16() {
        assert_eq!(
            sorted(json!(["\u{ff61}", "\u{1f600}", {"a": 1}]), None, false),
            json!([{"a": 1}, "\u{1f600}", "\u{ff61}"])
        );
        assert_eq!(
            sorted(json!(["10", "9", 2]), None, true),
            json!(["9", 2, "10"])
        );
    }

    #[test]
    fn inconsistent_comparisons_do_not_panic() {
        let items: Vec<Value> = (0..200)
            .map(|i| {
                if i % 3 == 0 {
                    json!(i)
                } else {
                    json!(i.to_string())
                }
            })
            .collect();
        assert_eq!(sort_items(items, None, false).len(), 200);
    }
}
