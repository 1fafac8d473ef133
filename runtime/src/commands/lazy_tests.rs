//! Unparsed items (`exec --json` array elements read field by field) give
//! exactly what parsed items give: the same stages over the same JSON text,
//! once streamed from `exec --json` (lazy) and once given as parsed input.

use crate::executor::{run_pipeline, Outcome};
use crate::kernel::{Context, Mode};
use crate::state::StateStore;
use crate::value::{to_js_json, Item};
use std::fmt::Write;

fn run(ctx: &Context, pipeline: &str, input: Vec<Item>) -> Result<Vec<Item>, String> {
    let pipeline = crate::dsl::parse(pipeline).map_err(|e| e.to_string())?;
    match run_pipeline(&pipeline, 0, input, ctx) {
        Ok(Outcome::Completed { items, .. }) => Ok(items),
        Ok(other) => panic!("unexpected outcome {other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

/// `stages` over `text` both ways; the results (items or error) must agree.
fn both_ways(dir: &std::path::Path, text: &str, stages: &str) -> Result<Vec<Item>, String> {
    let ctx = crate::commands::test_context(Mode::Tool, StateStore::new(dir.join("state")));
    let file = dir.join("items.json");
    std::fs::write(&file, text).unwrap();
    let lazy = run(
        &ctx,
        &format!("exec --json --shell 'cat {}' | {stages}", file.display()),
        vec![],
    );
    let eager = match serde_json::from_str::<Vec<Item>>(text) {
        Ok(items) => run(&ctx, stages, items),
        Err(e) => Err(e.to_string()),
    };
    match (&lazy, &eager) {
        (Ok(a), Ok(b)) => assert_eq!(
            to_js_json(&Item::Array(a.clone())),
            to_js_json(&Item::Array(b.clone())),
            "{stages} over {text}"
        ),
        (Err(_), Err(_)) => {}
        _ => panic!("{stages} over {text}: lazy {lazy:?}, parsed {eager:?}"),
    }
    lazy
}

/// A fixed-seed generator of JSON text for items that share a few field
/// names (some nested, repeated, escaped, missing or of mixed types).
struct Gen(u64);

impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn scalar(&mut self, out: &mut String) {
        let text = match self.next(14) {
            0 => "null".to_string(),
            1 => "true".to_string(),
            2 => "false".to_string(),
            3 => format!("{}", self.next(100)),
            4 => format!("-{}.{}", self.next(50), self.next(10)),
            5 => format!("{}e{}", self.next(9) + 1, self.next(4)),
            6 => "\"10\"".to_string(),
            7 => "\" 7 \"".to_string(),
            8 => "\"b\\\"q\"".to_string(),
            9 => "\"\u{e9}\u{1f600}\"".to_string(),
            10 => "\"\\u00e9x\"".to_string(),
            11 => "12345678901234567890123".to_string(),
            12 => "[3, 1]".to_string(),
            _ => "\"\"".to_string(),
        };
        out.push_str(&text);
    }

    fn value(&mut self, out: &mut String, depth: u32) {
        if depth > 2 || self.next(3) != 0 {
            return self.scalar(out);
        }
        out.push('{');
        let fields = self.next(4);
        for i in 0..fields {
            if i > 0 {
                out.push_str(", ");
            }
            // `k`, spelt with an escape sometimes; `n` may repeat.
            let key = ["k", "k", "n", "n", "\\u006b", "x"][self.next(6) as usize];
            let _ = write!(out, "\"{key}\" : ");
            self.value(out, depth + 1);
        }
        out.push('}');
    }

    fn items(&mut self) -> String {
        let mut out = String::from(" [");
        for i in 0..self.next(12) {
            if i > 0 {
                out.push_str(if self.next(2) == 0 { "," } else { " ,\n " });
            }
            if self.next(8) == 0 {
                self.scalar(&mut out);
            } else {
                self.value(&mut out, 0);
            }
        }
        out.push_str("] ");
        out
    }
}

#[test]
fn unparsed_items_give_what_parsed_items_give() {
    let dir = tempfile::tempdir().unwrap();
    let stages = [
        "where k>5",
        "where k==10",
        "where k!=null",
        "where n.k<50",
        "where n.k.length==2",
        "where k.0>=2",
        "where x=true",
        "where n..k>0",
        "sort --key k",
        "sort --key n.k --desc",
        "sort --key k.0",
        "sort --key .n..k. | head --n 3",
        "sort --key k --desc | head --n 2",
        "where k>0 | sort --key n.k | head --n 4",
        "head --n 3",
        "sort | head --n 2",
        "where k<100 | json",
        "where k>1 | pick k,n",
    ];
    // Shapes the fast lookups must tell apart: empty containers as values,
    // a key that is also a value, repeated keys, keys needing escapes.
    let fixed = [
        r#"[{"k": {}}, {"k": []}, {"k": [], "n": 1}, {"n": {}, "k": 3}]"#,
        r#"[{"x": "k", "k": 9}, {"k": 1, "k": 12}, {"k": 12, "k": 1}, {"k\"": 1, "k": 6}]"#,
        r#"[{"n": {"k": 7}}, {"n": {"k": 7, "k": 70}}, {"\u006b": 40}, {"k": "\u0037"}]"#,
        r#"[{"k":1,"n":2},{"n":2,"k":60},{"k" : 7 ,"n":{ }},{"k":"6"},{"k":null},{}]"#,
    ];
    let mut gen = Gen(0x9e37_79b9_7f4a_7c15);
    let texts = fixed
        .iter()
        .map(|t| t.to_string())
        .chain((0..60).map(|_| gen.items()));
    for text in texts {
        for stages in stages {
            both_ways(dir.path(), &text, stages).unwrap();
        }
    }
}

#[test]
fn an_item_that_is_filtered_out_unparsed_is_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    // A trailing comma inside the second element; serde_json's message at
    // its offset in the array, after the first (kept) item.
    let e = both_ways(dir.path(), r#"[{"s": 9}, {"s": 1,}]"#, "where s>5").unwrap_err();
    assert_eq!(
        e,
        "exec --json could not parse stdout as JSON: trailing comma at position 19"
    );
    // A lone surrogate, which the fast path leaves to serde_json.
    let e = both_ways(dir.path(), r#"[{"s": 1, "t": "\udc00"}]"#, "where s>5").unwrap_err();
    assert!(e.contains("surrogate"), "{e}");
    // Paired surrogates are fine, and read the slow way.
    let items = both_ways(
        dir.path(),
        r#"[{"s": 9, "t": "\ud83d\ude00"}]"#,
        "where s>5",
    )
    .unwrap();
    assert_eq!(items, vec![serde_json::json!({"s": 9, "t": "\u{1f600}"})]);
}

#[test]
fn a_large_input_keeps_few_batches_while_sorting() {
    // 20k items through a bounded sort: the kept items are copied out of
    // their batches, and the result is the parsed result.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[");
    for i in 0..20_000u64 {
        if i > 0 {
            text.push(',');
        }
        let _ = write!(text, "{{\"id\":{i},\"score\":{}}}", (i * 7919 + 13) % 101);
    }
    text.push(']');
    let items = both_ways(
        dir.path(),
        &text,
        "where score>50 | sort --key score --desc | head --n 5",
    )
    .unwrap();
    assert_eq!(items.len(), 5);
    assert_eq!(items[0]["score"], 100);
}
