//! `sort`: stable sort by a dot-path key or by the item itself.

use super::js::{dot_path, flag_string, flag_truthy};
use super::{
    parsed, stream_of, Command, Example, FlagSpec, ItemStream, LazyStream, Output, Signature,
};
use crate::dsl::Args;
use crate::error::Result;
use crate::kernel::Context;
use crate::value::{js_to_string, Field, FieldPath, Item, Lazy};
use serde_json::Value;
use std::cmp::Ordering;
use topk::{Cutoff, RunStack};

mod topk;

/// `sort [--key path] [--desc]`.
pub struct Sort;

const HELP: &str = "sort — sort items (stable) by a key\n\nUsage:\n  ... | sort\n  ... | sort --key updatedAt\n  ... | sort --key prNumber --desc\n\nNotes:\n  - Sorting is stable (preserves order for equal keys).\n  - undefined/null keys sort last.\n";

/// A sort key computed once per item: JavaScript's comparator needs a number
/// or `String(value)`, so both are prepared up front instead of per comparison.
#[derive(Debug, Clone)]
enum Key {
    /// `undefined` or `null`: last in both directions.
    Absent,
    /// A number (compared numerically with other numbers); the original is
    /// kept for `String()` when it meets a non-number.
    Num(f64, serde_json::Number),
    /// `String(value)` of anything else; `bytewise` when UTF-8 byte order
    /// equals UTF-16 code-unit order for it (no character at or above U+E000).
    Text { text: String, bytewise: bool },
}

impl Key {
    fn of(value: Option<&Value>) -> Key {
        match value {
            None | Some(Value::Null) => Key::Absent,
            Some(Value::Number(n)) => Key::Num(n.as_f64().unwrap_or(0.0), n.clone()),
            Some(other) => Key::text(js_to_string(Some(other))),
        }
    }

    fn text(text: String) -> Key {
        // Lead bytes >= 0xEE start U+E000 and above (where UTF-16 order differs).
        let bytewise = !text.bytes().any(|b| b >= 0xee);
        Key::Text { text, bytewise }
    }
}

/// The reference's comparator for two present, non-null values: numbers
/// numerically, everything else by `String()` in UTF-16 code-unit order.
fn compare_present(a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Num(x, _), Key::Num(y, _)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (
            Key::Text {
                text: x,
                bytewise: bx,
            },
            Key::Text {
                text: y,
                bytewise: by,
            },
        ) => {
            if *bx && *by {
                x.as_bytes().cmp(y.as_bytes())
            } else {
                x.encode_utf16().cmp(y.encode_utf16())
            }
        }
        _ => {
            let (sa, sb) = (key_string(a), key_string(b));
            sa.encode_utf16().cmp(sb.encode_utf16())
        }
    }
}

fn key_string(key: &Key) -> std::borrow::Cow<'_, str> {
    match key {
        Key::Absent => "undefined".into(),
        Key::Num(_, n) => js_to_string(Some(&Value::Number(n.clone()))).into(),
        Key::Text { text, .. } => text.as_str().into(),
    }
}

/// null/undefined last in both directions; `desc` reverses the rest.
fn compare_keys(a: &Key, b: &Key, desc: bool) -> Ordering {
    match (a, b) {
        (Key::Absent, Key::Absent) => Ordering::Equal,
        (Key::Absent, _) => Ordering::Greater,
        (_, Key::Absent) => Ordering::Less,
        (a, b) => {
            let c = compare_present(a, b);
            if desc {
                c.reverse()
            } else {
                c
            }
        }
    }
}

fn key_of(item: &Item, key: Option<&str>) -> Key {
    match key {
        Some(path) => Key::of(dot_path(item, path).as_deref()),
        None => Key::of(Some(item)),
    }
}

/// [`key_of`] for an item that may be unparsed, with `path` split into
/// its non-empty segments (`starts` are where they begin in `path`).
fn lazy_key_of(item: &Lazy, path: &str, field: &FieldPath, starts: &[usize]) -> Key {
    let raw = match item {
        Lazy::Parsed(item) => return key_of(item, Some(path)),
        Lazy::Raw(raw) => raw,
    };
    match raw.field(field) {
        Field::Missing => Key::of(None),
        Field::Value { value, used } => match starts.get(used) {
            None => Key::of(Some(&value)),
            Some(&at) => Key::of(dot_path(&value, &path[at..]).as_deref()),
        },
    }
}

/// The first `limit` items of `sort --key key [--desc]` over `items`.
///
/// A full sort (`limit` ≥ the item count) merges `u32` indices into the
/// key table, so merges move 4 bytes per item; a bounded one keeps (key,
/// item) pairs so that items falling out of the top K are freed at once.
/// Both use the same merge tree, hence the same result.
fn sort_stream<T: 'static>(
    items: impl Iterator<Item = Result<T>>,
    key_of: impl Fn(&T) -> Key,
    desc: bool,
    limit: usize,
    settle: fn(&mut T),
) -> Result<Vec<T>> {
    if limit < u32::MAX as usize {
        let mut runs: RunStack<(Key, T)> = RunStack::new(
            limit,
            Box::new(move |pair: &mut (Key, T)| settle(&mut pair.1)),
        );
        let less = |a: &(Key, T), b: &(Key, T)| compare_keys(&a.0, &b.0, desc) == Ordering::Less;
        let mut cutoff = Cutoff::new(limit, desc);
        for item in items {
            let item = item?;
            let key = key_of(&item);
            if !cutoff.drops(&key) {
                runs.push((key, item), &less);
            }
        }
        return Ok(runs
            .finish(&less)
            .into_iter()
            .map(|(_, item)| item)
            .collect());
    }
    let (mut keys, mut slots) = (Vec::new(), Vec::new());
    let mut runs: RunStack<u32> = RunStack::new(limit, Box::new(|_| {}));
    for item in items {
        let mut item = item?;
        let Ok(index) = u32::try_from(keys.len()) else {
            return Err(crate::error::Error::runtime("sort: too many items"));
        };
        keys.push(key_of(&item));
        // Every item is kept until the end.
        settle(&mut item);
        slots.push(Some(item));
        let keys = &keys;
        runs.push(index, &|a: &u32, b: &u32| {
            compare_keys(&keys[*a as usize], &keys[*b as usize], desc) == Ordering::Less
        });
    }
    let order = runs.finish(&|a: &u32, b: &u32| {
        compare_keys(&keys[*a as usize], &keys[*b as usize], desc) == Ordering::Less
    });
    drop(keys);
    Ok(order
        .into_iter()
        .filter_map(|i| slots.get_mut(i as usize).and_then(Option::take))
        .collect())
}

/// Sort `items` as `sort --key key [--desc]` does.
#[cfg(test)]
fn sort_items(items: Vec<Item>, key: Option<&str>, desc: bool) -> Vec<Item> {
    sort_stream(
        items.into_iter().map(Ok),
        |item| key_of(item, key),
        desc,
        usize::MAX,
        |_| {},
    )
    .unwrap_or_default()
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
                    kind: super::FlagType::Text,
                    description: "Dot-path key to sort by (e.g. updatedAt, pr.number)",
                },
                FlagSpec {
                    name: "desc",
                    value: None,
                    kind: super::FlagType::Switch,
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
        Self::sorted(args, input, usize::MAX)
    }

    /// `sort | head --n K`: a bounded top-K, identical to the first K items
    /// of the full sort (see [`RunStack`]). The whole input is still read.
    fn run_limited(
        &self,
        args: &Args,
        input: ItemStream,
        limit: usize,
        _ctx: &Context,
    ) -> Result<Output> {
        Self::sorted(args, input, limit)
    }

    /// With `--key`, unparsed items are sorted by the field alone and come
    /// out unparsed.
    fn run_lazy(
        &self,
        args: &Args,
        input: LazyStream,
        limit: Option<usize>,
        _ctx: &Context,
    ) -> Result<Output> {
        let Some(path) = flag_string(args, "key") else {
            return Self::sorted(args, parsed(input), limit.unwrap_or(usize::MAX));
        };
        let desc = flag_truthy(args.flag("desc"));
        // dot_path's segments: empty ones are skipped.
        let mut segments = Vec::new();
        let mut starts = Vec::new();
        let mut at = 0;
        for seg in path.split('.') {
            if !seg.is_empty() {
                segments.push(seg);
                starts.push(at);
            }
            at += seg.len() + 1;
        }
        let field = FieldPath::new(segments);
        let sorted = sort_stream(
            input,
            |item| lazy_key_of(item, path, &field, &starts),
            desc,
            limit.unwrap_or(usize::MAX),
            Lazy::settle,
        )?;
        Ok(Output::Lazy(Box::new(sorted.into_iter().map(Ok))))
    }
}

impl Sort {
    fn sorted(args: &Args, input: ItemStream, limit: usize) -> Result<Output> {
        let key = flag_string(args, "key");
        let desc = flag_truthy(args.flag("desc"));
        let sorted = sort_stream(input, |item| key_of(item, key), desc, limit, |_| {})?;
        Ok(Output::Items(stream_of(sorted)))
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

    /// xorshift64*: a fixed-seed generator, so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A value of a random type, with few distinct values so ties are common.
    fn random_value(rng: &mut Rng, mixed: bool) -> Value {
        let kinds = if mixed { 8 } else { 2 };
        match rng.below(kinds) {
            0 => json!(rng.below(5)),
            1 => json!(rng.below(7) as f64 / 2.0 - 1.0),
            2 => json!(["9", "10", "a", "B", "\u{ff61}", "\u{1f600}", ""][rng.below(7) as usize]),
            3 => json!(rng.below(2) == 0),
            4 => json!({"o": rng.below(2)}),
            5 => json!([rng.below(3), 1]),
            6 => Value::Null,
            _ => json!("3"),
        }
    }

    fn random_items(rng: &mut Rng, n: usize, mixed: bool) -> Vec<Value> {
        (0..n)
            .map(|i| {
                let mut obj = serde_json::Map::new();
                obj.insert("i".into(), json!(i));
                match rng.below(6) {
                    0 => {} // missing key
                    1 => {
                        obj.insert("k".into(), Value::Null);
                    }
                    _ => {
                        obj.insert("k".into(), random_value(rng, mixed));
                    }
                }
                Value::Object(obj)
            })
            .collect()
    }

    #[test]
    fn top_k_after_a_long_run_of_numbers_then_mixed_keys_equals_the_full_sort_prefix() {
        // Items dropped early (numbers only so far) stay dropped when text
        // keys arrive later and the comparator stops being a total order.
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..200 {
            let n = 20 + rng.below(60) as usize;
            let pure = rng.below(n as u64) as usize;
            let mut items = random_items(&mut rng, pure, false);
            items.extend(random_items(&mut rng, n - pure, true));
            for desc in [false, true] {
                let full = sort_items(items.clone(), Some("k"), desc);
                for k in [1, 2, 3, 7, 20] {
                    let top = sort_stream(
                        items.clone().into_iter().map(Ok),
                        |item| key_of(item, Some("k")),
                        desc,
                        k,
                        |_| {},
                    )
                    .unwrap();
                    assert_eq!(top, full[..k.min(n)], "round {round} k {k} desc {desc}");
                }
            }
        }
    }

    #[test]
    fn top_k_equals_the_full_sort_prefix() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let n = rng.below(70) as usize;
            let mixed = round % 3 != 0;
            let items = random_items(&mut rng, n, mixed);
            for key in [Some("k"), None] {
                for desc in [false, true] {
                    let full = sort_items(items.clone(), key, desc);
                    assert_eq!(full.len(), n);
                    for k in [0, 1, 5, n, n + 3] {
                        let top = sort_stream(
                            items.clone().into_iter().map(Ok),
                            |item| key_of(item, key),
                            desc,
                            k,
                            |_| {},
                        )
                        .unwrap();
                        assert_eq!(
                            top,
                            full[..k.min(n)],
                            "round {round} n {n} k {k} key {key:?} desc {desc}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn full_sort_is_a_stable_sort_when_the_order_is_consistent() {
        // Numbers only (or no numbers): the comparator is a total preorder,
        // so any stable sort must agree with std's.
        let mut rng = Rng(42);
        for _ in 0..200 {
            let n = rng.below(60) as usize;
            let items = random_items(&mut rng, n, false);
            for desc in [false, true] {
                let mut want = items.clone();
                want.sort_by(|a, b| compare_keys(&Key::of(a.get("k")), &Key::of(b.get("k")), desc));
                assert_eq!(sort_items(items.clone(), Some("k"), desc), want);
            }
        }
        let mut rng = Rng(7);
        for _ in 0..200 {
            let n = rng.below(60) as usize;
            let items: Vec<Value> = (0..n)
                .map(|i| {
                    let k = ["9", "10", "a", "B", "\u{ff61}", "\u{1f600}", "", "b"]
                        [rng.below(8) as usize];
                    json!({"i": i, "k": k})
                })
                .collect();
            let mut want = items.clone();
            want.sort_by(|a, b| compare_keys(&Key::of(a.get("k")), &Key::of(b.get("k")), false));
            assert_eq!(sort_items(items, Some("k"), false), want);
        }
    }

    #[test]
    fn sort_then_head_runs_as_top_k_through_the_executor() {
        use crate::executor::{run_pipeline, Outcome};
        use crate::kernel::Mode;
        let dir = tempfile::tempdir().unwrap();
        let ctx =
            crate::commands::test_context(Mode::Tool, crate::state::StateStore::new(dir.path()));
        let mut rng = Rng(99);
        let items = random_items(&mut rng, 500, true);
        let run = |text: &str| match run_pipeline(
            &crate::dsl::parse(text).unwrap(),
            0,
            items.clone(),
            &ctx,
        )
        .unwrap()
        {
            Outcome::Completed { items, .. } => items,
            other => panic!("{other:?}"),
        };
        for desc in ["", " --desc"] {
            let full = run(&format!("sort --key k{desc}"));
            for k in [0, 1, 5, 500, 600] {
                let top = run(&format!("sort --key k{desc} | head --n {k}"));
                assert_eq!(top, full[..k.min(500)], "k {k}{desc}");
            }
        }
    }
}
