//! Tests of the canonical JSON, in their own file to keep `canon.rs` under 700 lines.

use super::*;

fn canon(text: &str) -> String {
    to_canonical(&serde_json::from_str::<Value>(text).unwrap())
}

/// RFC 8785 §3.2.2, the example of the whole scheme.
#[test]
fn rfc_example_of_the_whole_scheme() {
    let input = r#"{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"#;
    assert_eq!(
        canon(input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

/// RFC 8785 §3.2.3: keys sorted by UTF-16 code units (the emoji's
/// surrogates sort before U+FB33 although its code point is larger).
#[test]
fn rfc_example_of_key_sorting() {
    let input = r#"{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }"#;
    let out = canon(input);
    let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&out)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "\r",
            "1",
            "\u{80}",
            "\u{f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}"
        ]
    );
    assert!(out.starts_with(r#"{"\r":"Carriage Return","1":"One","#));
}

/// RFC 8785 Appendix B: IEEE 754 doubles and their canonical text.
#[test]
fn rfc_appendix_b_numbers() {
    let cases: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for (bits, want) in cases {
        let f = f64::from_bits(*bits);
        let mut out = String::new();
        write_f64(&mut out, f);
        assert_eq!(&out, want, "{bits:016x}");
        // The same through a parsed JSON number.
        let parsed: Value = serde_json::from_str(&format!("{f:e}")).unwrap();
        assert_eq!(&to_canonical(&parsed), want, "{bits:016x} parsed");
    }
}

#[test]
fn integers_beyond_two_to_the_53_are_doubles() {
    assert_eq!(canon("9007199254740993"), "9007199254740992");
    assert_eq!(canon("-12"), "-12");
    assert_eq!(canon("18446744073709551615"), "18446744073709552000");
}

/// The text written straight from a value is the text of its
/// `serde_json::Value`, for every event kind and for hostile args
/// (keys out of order, non-ASCII keys sorting by UTF-16, escapes,
/// numbers past 2^53, floats, nesting) — the chain's bytes do not
/// depend on which way they were made.
#[test]
fn the_text_written_from_a_value_is_the_text_of_its_json_tree() {
    use crate::journal::*;
    let args: Value = serde_json::from_str(
        r#"{"z":1,"\ufb33":[1.5,-0.0,1e21,18446744073709551615,-9007199254740993],
            "\ud83d\ude00":{"b":null,"a":"\u0000\"\\\n\u2028é"},"1":true,"":[]}"#,
    )
    .unwrap();
    let events = vec![
        Event::RunStarted(Box::new(RunStarted {
            run_id: "r".into(),
            at: now_rfc3339(),
            door: "serve".into(),
            tenant: "t".into(),
            trust: "untrusted".into(),
            policy_digest: digest(b"p"),
            request: RequestRecord::new(
                "workflow",
                Some("w.lobster".into()),
                "a: \"b\"\n\t",
                args.clone(),
            ),
            grants: GrantsRecord {
                read: vec!["./d:/d".into()],
                clock_ms: Some(u64::MAX),
                seed: Some(u64::MAX - 1),
                ..GrantsRecord::default()
            },
            components: vec![ComponentRecord {
                name: "c".into(),
                digest: digest(b"c"),
            }],
            env_names: vec!["PATH".into()],
            cwd: ".".into(),
            digests: DigestRule::V2,
        })),
        Event::RunResumed(RunResumed::default()),
        Event::Step(Step {
            id: "1".into(),
            step_kind: "wasm".into(),
            fuel: Some((1 << 53) + 1),
            exit_code: Some(-1),
            output: Some("x\u{1}y".into()),
            replayable: false,
            ..Step::default()
        }),
        Event::GateOpened(GateOpened {
            approval_id: Some("a".into()),
            ..GateOpened::default()
        }),
        Event::Decision(Decision::default()),
        Event::CallIntent(CallIntent::default()),
        Event::CallAnswer(CallAnswer {
            request_digest: "d".into(),
            answer: args.clone(),
            replayed: true,
        }),
        Event::Error(ErrorEvent::default()),
        Event::RunEnded(RunEnded {
            output_digest: Some("o".into()),
            ..RunEnded::default()
        }),
        Event::Capped(Capped { limit_bytes: 3 }),
    ];
    for e in &events {
        let tree = to_canonical(&serde_json::to_value(e).unwrap());
        assert_eq!(to_canonical_of(e).unwrap(), tree, "{}", e.kind());
    }
    assert_eq!(to_canonical_of(&args).unwrap(), to_canonical(&args));
    let dup = serde_json::json!({"a": 1});
    let mut map = std::collections::BTreeMap::new();
    map.insert(3u32, vec![(1, "x")]);
    map.insert(20u32, vec![]);
    assert_eq!(
        to_canonical_of(&map).unwrap(),
        to_canonical(&serde_json::to_value(&map).unwrap())
    );
    assert_eq!(to_canonical_of(&dup).unwrap(), r#"{"a":1}"#);
    assert_eq!(to_canonical_of("r\"un").unwrap(), r#""r\"un""#);
}

#[test]
fn control_characters_escape_in_lowercase_and_others_stay_literal() {
    assert_eq!(
        canon(r#""\u001f\u007f\u2028é""#),
        "\"\\u001f\u{7f}\u{2028}é\""
    );
    assert_eq!(canon(r#"{"b":[],"a":{}}"#), r#"{"a":{},"b":[]}"#);
}

/// Integers serialized straight from Rust values: exact up to 2^53 either
/// side, sign included, doubles past it.
#[test]
fn integers_from_values_print_in_decimal() {
    for (n, text) in [
        (0i64, "0"),
        (-1, "-1"),
        (1 << 53, "9007199254740992"),
        (-(1 << 53), "-9007199254740992"),
        (i64::MAX, "9223372036854776000"),
        (i64::MIN, "-9223372036854776000"),
    ] {
        assert_eq!(to_canonical_of(&n).unwrap(), text, "{n}");
    }
    for (n, text) in [
        (0u64, "0"),
        (10, "10"),
        (1 << 53, "9007199254740992"),
        (u64::MAX, "18446744073709552000"),
    ] {
        assert_eq!(to_canonical_of(&n).unwrap(), text, "{n}");
    }
}

/// An object's entries written out of order are put in order in place,
/// a later duplicate key winning (RFC 8785 §3.2.3), nested objects each in
/// their own order, whatever the keys' lengths and escapes: the same text
/// as the tree's sorted writer.
#[test]
fn entries_out_of_order_are_reordered_in_place_and_a_later_duplicate_wins() {
    struct Dup;
    impl serde::Serialize for Dup {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut m = s.serialize_map(None)?;
            m.serialize_entry("b", &1)?;
            m.serialize_entry("a\"\n", &serde_json::json!({"z": [1], "y": "é"}))?;
            m.serialize_entry("b", &2)?;
            m.serialize_entry("", &"first")?;
            m.serialize_entry("a\"\n", &3)?;
            m.end()
        }
    }
    assert_eq!(
        to_canonical_of(&Dup).unwrap(),
        r#"{"":"first","a\"\n":3,"b":2}"#
    );
    let big: Value = serde_json::from_str(&format!(
        r#"{{"z":"{}","\u20ac":{{"y":[{{"b":1,"a":2}}],"x":"\u0001"}},"a":[{}],"m":1.5e300}}"#,
        "q\\\"".repeat(30_000),
        (0..2000)
            .map(|i| format!(r#"{{"k{i}":{i},"j":"\u00e9"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    ))
    .unwrap();
    for _ in 0..2 {
        assert_eq!(to_canonical_of(&big).unwrap(), to_canonical(&big));
    }
}
