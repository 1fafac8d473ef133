//! Tests of the journal's typed events (`event.rs`).

use super::*;

#[test]
fn events_round_trip_with_their_kind_tag() {
    let e = Event::Step(Step {
        id: "1".into(),
        step_kind: "wasm".into(),
        wall_ms: 3,
        ok: true,
        replayable: true,
        ..Step::default()
    });
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v["kind"], "step");
    assert!(v.get("replayable").is_none());
    assert_eq!(serde_json::from_value::<Event>(v).unwrap(), e);
}

#[test]
fn a_brokered_answer_keeps_its_key_order_through_the_canonical_form() {
    let answer: Value = serde_json::from_str(r#"{"z":1,"a":{"y":2,"b":3}}"#).unwrap();
    let e = Event::CallAnswer(CallAnswer {
        request_digest: "d".into(),
        answer: answer.clone(),
        replayed: false,
    });
    let text = crate::journal::canon::to_canonical(&serde_json::to_value(&e).unwrap());
    let back: Event = serde_json::from_str(&text).unwrap();
    let Event::CallAnswer(back) = back else {
        panic!("{text}")
    };
    assert_eq!(
        serde_json::to_string(&back.answer).unwrap(),
        r#"{"z":1,"a":{"y":2,"b":3}}"#
    );
}

#[test]
fn a_large_seed_is_recorded_exactly_in_canonical_form() {
    let g = GrantsRecord {
        seed: Some(u64::MAX - 1),
        ..GrantsRecord::default()
    };
    let text = crate::journal::canon::to_canonical(&serde_json::to_value(&g).unwrap());
    assert!(text.contains("\"18446744073709551614\""), "{text}");
    let back: GrantsRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(back.seed, Some(u64::MAX - 1));
    let none: GrantsRecord = serde_json::from_str("{}").unwrap();
    assert_eq!(none.seed, None);
}

#[test]
fn item_digests_are_of_the_items_json_text_however_long() {
    // Past the hashing chunk (64 KiB) and the buffer kept (256 KiB),
    // with integer-like keys (JavaScript's order) and escapes.
    for n in [0usize, 1, 3, 10_000] {
        let items: Vec<Value> = (0..n)
            .map(|i| serde_json::json!({"name": format!("item \"{i}\"\n"), "2": i, "1": [i, "é"]}))
            .collect();
        let text = crate::value::to_js_json(&Value::Array(items.clone()));
        assert!(n < 10_000 || text.len() > 256 << 10);
        assert_eq!(items_digest(&items), digest(text.as_bytes()), "{n} items");
        assert_eq!(value_digest(&Value::Array(items)), digest(text.as_bytes()));
    }
    assert!(
        crate::value::to_js_json(&serde_json::json!({"b": 1, "10": 2, "a": 3}))
            .starts_with("{\"10\":2,\"b\":1")
    );
}

/// The last text digested is kept on the thread and not hashed again:
/// the same items again (one step's output, the next one's input) get
/// the digest of their text, and so does anything else digested in
/// between or after — items equal as values but printed otherwise (key
/// order), a value's digest, text past the kept size, a fresh thread.
#[test]
fn a_repeated_items_text_has_the_digest_of_its_text() {
    let old_way = |items: &[Value]| {
        digest(crate::value::to_js_json(&Value::Array(items.to_vec())).as_bytes())
    };
    let a: Vec<Value> =
        vec![serde_json::json!({"x": "é\n\"", "y": [1, 2.5, null], "10": {"b": true, "a": 1e21}})];
    let b: Vec<Value> =
        vec![
            serde_json::from_str(r#"{"y":[1,2.5,null],"x":"é\n\"","10":{"a":1e21,"b":true}}"#)
                .unwrap(),
        ];
    assert_eq!(a, b, "equal as values");
    assert_ne!(old_way(&a), old_way(&b), "printed otherwise");
    let large: Vec<Value> = (0..5000)
        .map(|i| serde_json::json!({"n": i, "s": "😀".repeat(5)}))
        .collect();
    let sequence: Vec<&[Value]> = vec![&a, &a, &b, &a, &[], &[], &large, &large, &a, &b, &b];
    for (i, items) in sequence.iter().enumerate() {
        assert_eq!(items_digest(items), old_way(items), "call {i}");
        if i == 3 {
            assert_eq!(value_digest(&Value::Array(b.clone())), old_way(&b));
        }
    }
    let on_another_thread = std::thread::spawn({
        let a = a.clone();
        move || items_digest(&a)
    });
    assert_eq!(on_another_thread.join().unwrap(), old_way(&a));
}

/// Rule 1 is recorded by its absence, so a rule-1 `run_started` is
/// byte for byte what it was before there were rules; rule 2 is
/// `"digests":2`; a rule this lobster does not know is refused by name.
#[test]
fn the_digest_rule_is_written_only_when_it_is_not_rule_1() {
    let v1 = RunStarted::default();
    let text = crate::journal::canon::to_canonical_of(&Event::RunStarted(Box::new(v1))).unwrap();
    assert!(!text.contains("digests"), "{text}");
    let back: Event = serde_json::from_str(&text).unwrap();
    let Event::RunStarted(back) = back else {
        panic!("{text}")
    };
    assert_eq!(back.digests, DigestRule::V1);
    let v2 = RunStarted {
        digests: DigestRule::V2,
        ..RunStarted::default()
    };
    let text = crate::journal::canon::to_canonical_of(&Event::RunStarted(Box::new(v2))).unwrap();
    assert!(text.contains(r#""digests":2"#), "{text}");
    let back: Event = serde_json::from_str(&text).unwrap();
    let Event::RunStarted(back) = back else {
        panic!("{text}")
    };
    assert_eq!(back.digests, DigestRule::V2);
    let newer = text.replace(r#""digests":2"#, r#""digests":3"#);
    let e = serde_json::from_str::<Event>(&newer).unwrap_err();
    assert!(e.to_string().contains("digest rule 3"), "{e}");

    // A resume state's head written before rules: rule 1.
    let head: crate::journal::Head =
        serde_json::from_str(r#"{"run":"r","events":3,"hash":"h"}"#).unwrap();
    assert_eq!(head.digests, DigestRule::V1);
    assert_eq!(
        serde_json::to_string(&head).unwrap(),
        r#"{"run":"r","events":3,"hash":"h"}"#
    );
}

/// A workflow step's output digest: rule 2 of its `stdout` text as it
/// is, rule 1 of the whole result printed; a result without a stdout
/// (text) is printed under both.
#[test]
fn a_workflow_steps_output_digest_follows_the_rule() {
    let r = serde_json::json!({"id": "s", "stdout": "[1, 2]\n", "json": [1, 2]});
    assert_eq!(step_output_digest(DigestRule::V2, &r), digest(b"[1, 2]\n"));
    assert_eq!(step_output_digest(DigestRule::V1, &r), value_digest(&r));
    let bare = serde_json::json!({"id": "s", "skipped": true});
    for rule in [DigestRule::V1, DigestRule::V2] {
        assert_eq!(step_output_digest(rule, &bare), value_digest(&bare));
    }
}

#[test]
fn request_text_is_capped_on_a_char_boundary_with_the_full_digest() {
    let text = "é".repeat(REQUEST_TEXT_CAP);
    let r = RequestRecord::new("pipeline", None, &text, Value::Null);
    assert!(r.truncated);
    assert!(r.text.len() <= REQUEST_TEXT_CAP);
    assert_eq!(r.digest, digest(text.as_bytes()));
}
