//! The direct writer's bytes against the general path (serde into the
//! canonical serializer, and the `serde_json::Value` tree), for every event
//! kind, randomised; and against a journal written by an earlier build.

use super::*;
use crate::journal::canon::{to_canonical, to_canonical_of};
use crate::journal::chain;

fn direct(e: &Event) -> String {
    let mut out = String::new();
    write_event(&mut out, e);
    out
}

fn general(e: &Event) -> String {
    let tree = to_canonical(&serde_json::to_value(e).unwrap());
    assert_eq!(to_canonical_of(e).unwrap(), tree, "{}", e.kind());
    tree
}

/// A small deterministic generator (xorshift64*).
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
    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
    /// Text with what needs escaping and what does not: quotes,
    /// backslashes, control characters, U+2028, non-ASCII, astral.
    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "",
            "a",
            "step",
            "\"",
            "\\",
            "\n",
            "\t",
            "\u{0}",
            "\u{1f}",
            "\u{7f}",
            "\u{2028}",
            "é",
            "😀",
            "/",
            "<>&",
            " ",
            "0123456789abcdef",
            "\u{fb33}",
        ];
        let n = self.below(6);
        (0..n)
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect()
    }
    fn opt_text(&mut self) -> Option<String> {
        self.coin().then(|| self.text())
    }
    fn texts(&mut self) -> Vec<String> {
        (0..self.below(4)).map(|_| self.text()).collect()
    }
    fn number(&mut self) -> u64 {
        match self.below(5) {
            0 => 0,
            1 => self.below(1000),
            2 => 1 << 53,
            3 => (1 << 53) + 1 + self.below(1000),
            _ => self.next(),
        }
    }
    fn value(&mut self, depth: u32) -> serde_json::Value {
        use serde_json::Value;
        match self.below(if depth > 2 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.coin()),
            2 => Value::from(self.number()),
            3 => Value::from(-(self.below(1 << 60) as i64)),
            4 => match self.below(4) {
                0 => Value::from(1e21),
                1 => Value::from(-0.5),
                2 => Value::from(f64::from_bits(self.next() >> 2)),
                _ => Value::String(self.text()),
            },
            5 => Value::Array((0..self.below(4)).map(|_| self.value(depth + 1)).collect()),
            _ => Value::Object(
                (0..self.below(5))
                    .map(|_| (self.text(), self.value(depth + 1)))
                    .collect(),
            ),
        }
    }
    fn event(&mut self) -> Event {
        match self.below(10) {
            0 => Event::RunStarted(Box::new(RunStarted {
                run_id: self.text(),
                at: self.text(),
                door: self.text(),
                tenant: self.text(),
                trust: self.text(),
                policy_digest: self.text(),
                request: RequestRecord {
                    kind: self.text(),
                    file: self.opt_text(),
                    text: self.text(),
                    truncated: self.coin(),
                    digest: self.text(),
                    args: self.value(0),
                },
                grants: GrantsRecord {
                    read: self.texts(),
                    write: self.texts(),
                    env: self.texts(),
                    tools: self.texts(),
                    models: self.texts(),
                    clock_ms: self.coin().then(|| self.number()),
                    seed: self.coin().then(|| self.next()),
                },
                components: (0..self.below(3))
                    .map(|_| ComponentRecord {
                        name: self.text(),
                        digest: self.text(),
                    })
                    .collect(),
                env_names: self.texts(),
                cwd: self.text(),
                digests: if self.coin() {
                    DigestRule::V1
                } else {
                    DigestRule::V2
                },
            })),
            1 => Event::RunResumed(RunResumed {
                at: self.text(),
                door: self.text(),
                gate: self.text(),
            }),
            2 => Event::Step(Step {
                id: self.text(),
                step_kind: self.text(),
                name: self.text(),
                component: self.opt_text(),
                fuel: self.coin().then(|| self.number()),
                wall_ms: self.number(),
                limit: self.opt_text(),
                input_digest: self.opt_text(),
                output_digest: self.opt_text(),
                exit_code: self.coin().then(|| self.next() as i32),
                output: self.opt_text(),
                replayable: self.coin(),
                ok: self.coin(),
                within: self.opt_text(),
            }),
            3 => Event::GateOpened(GateOpened {
                gate: self.text(),
                step: self.text(),
                prompt: self.text(),
                preview_digest: self.text(),
                plan_digest: self.text(),
                approval_id: self.opt_text(),
            }),
            4 => Event::Decision(Decision {
                decision: self.text(),
                approver: self.opt_text(),
                decided_by: self.opt_text(),
                door: self.text(),
                response_digest: self.opt_text(),
            }),
            5 => Event::CallIntent(CallIntent {
                target: self.text(),
                name: self.text(),
                request_digest: self.text(),
            }),
            6 => Event::CallAnswer(CallAnswer {
                request_digest: self.text(),
                answer: self.value(0),
                replayed: self.coin(),
            }),
            7 => Event::Error(ErrorEvent {
                step: self.text(),
                message: self.text(),
            }),
            8 => Event::RunEnded(RunEnded {
                status: self.text(),
                at: self.text(),
                wall_ms: self.number(),
                output_digest: self.opt_text(),
            }),
            _ => Event::Capped(Capped {
                limit_bytes: self.number(),
            }),
        }
    }
}

#[test]
fn random_events_of_every_kind_have_the_general_paths_text() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut kinds = std::collections::BTreeSet::new();
    for i in 0..20_000 {
        let e = rng.event();
        kinds.insert(e.kind());
        assert_eq!(direct(&e), general(&e), "event {i}: {e:?}");
    }
    assert_eq!(kinds.len(), 10, "{kinds:?}");
}

#[test]
fn defaults_and_empty_fields_have_the_general_paths_text() {
    let events = [
        Event::RunStarted(Box::default()),
        Event::RunResumed(RunResumed::default()),
        Event::Step(Step::default()),
        Event::Step(Step {
            replayable: true,
            ..Step::default()
        }),
        Event::GateOpened(GateOpened::default()),
        Event::Decision(Decision::default()),
        Event::CallIntent(CallIntent::default()),
        Event::CallAnswer(CallAnswer::default()),
        Event::Error(ErrorEvent::default()),
        Event::RunEnded(RunEnded::default()),
        Event::Capped(Capped { limit_bytes: 0 }),
    ];
    for e in &events {
        assert_eq!(direct(e), general(e), "{}", e.kind());
    }
}

/// A journal written by the release build before the direct writer
/// (d05ed57): a workflow run with args (escapes, a float past 1e21, a
/// seed past 2^53) and a built-in pipeline. Each event read back and
/// written again has the recorded bytes, and each record the recorded
/// hash.
const GOLDEN: &str = r#"{"run":"6b10108272ed835a10f56203109308f7","seq":0,"prev":"0000000000000000000000000000000000000000000000000000000000000000","hash":"eef4b928317c024756995f1d3a9d2ec23b9f1d224bc7015db9e2c3e97d7e2b33","event":{"at":"2026-12-02T12:35:14.060Z","cwd":"/tmp/jev-gold","door":"cli","env_names":["HOME","LOBSTER_STATE_DIR","PATH"],"grants":{"clock_ms":1796214914060,"seed":"14592495038421692335"},"kind":"run_started","policy_digest":"626ce03f94ff871694c3f6e5fbed4aa5db1b380d858b50da6f40e0dfb772386a","request":{"args":{"a":null,"n":[1,2.5,1e+21],"who":"b\"é"},"digest":"e2886eb2299aae8e168568895d4e081621a5bf35ef9e285f0ac27b22b3f57503","file":"/tmp/jev-gold/w.lobster","kind":"workflow","text":"name: gold\ndescription: \"A \\\"golden\\\" journal: é, tab\\t, 😀\"\nargs:\n  who: {default: \"x\"}\nsteps:\n  - id: one\n    pipeline: commands.list | where name==exec | pick name\n"},"run_id":"6b10108272ed835a10f56203109308f7","tenant":"default","trust":"trusted"}}
{"run":"6b10108272ed835a10f56203109308f7","seq":1,"prev":"eef4b928317c024756995f1d3a9d2ec23b9f1d224bc7015db9e2c3e97d7e2b33","hash":"5f690f2840afe4e1f041b6cee8ad17a778267db9bdf854ceebc2bb0b16db0e77","event":{"id":"0","kind":"step","name":"commands.list","ok":true,"step_kind":"builtin","wall_ms":0}}
{"run":"6b10108272ed835a10f56203109308f7","seq":2,"prev":"5f690f2840afe4e1f041b6cee8ad17a778267db9bdf854ceebc2bb0b16db0e77","hash":"db73efdb91dbac9e5794dcffe4a065deaaef16279fa203dada7b54c6da921758","event":{"id":"1","kind":"step","name":"where","ok":true,"step_kind":"builtin","wall_ms":0}}
{"run":"6b10108272ed835a10f56203109308f7","seq":3,"prev":"db73efdb91dbac9e5794dcffe4a065deaaef16279fa203dada7b54c6da921758","hash":"a13eddf945cd69fc05562e72de25ce272e5a4d70b7f1f7d273a0fc4cc70e0673","event":{"id":"2","kind":"step","name":"pick","ok":true,"step_kind":"builtin","wall_ms":0}}
{"run":"6b10108272ed835a10f56203109308f7","seq":4,"prev":"a13eddf945cd69fc05562e72de25ce272e5a4d70b7f1f7d273a0fc4cc70e0673","hash":"7344bbff4297e383b8e4e05d7679bd0cad3000ce3b7f3877448297b7238e2068","event":{"id":"one","kind":"step","ok":true,"output_digest":"1d40f4f7f4d36818c1209dc846828ef91126d9545b5fb0da80c94575e063be36","step_kind":"pipeline","wall_ms":0}}
{"run":"6b10108272ed835a10f56203109308f7","seq":5,"prev":"7344bbff4297e383b8e4e05d7679bd0cad3000ce3b7f3877448297b7238e2068","hash":"9771babc78827698fa554c10198f3e195d3bcfd945e89c1020f7d73d97fe3709","event":{"at":"2026-12-02T12:35:14.062Z","kind":"run_ended","output_digest":"9d6c187ebab5d84c08b506ef8c5d025bc9b4e8c3a388df100f683545dbb89948","status":"ok","wall_ms":1}}
"#;

#[test]
fn an_earlier_builds_journal_is_written_and_hashed_byte_for_byte() {
    let mut prev = chain::GENESIS.to_string();
    for (seq, line) in GOLDEN.lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let recorded = &line[line.find(",\"event\":").unwrap() + 9..line.len() - 1];
        let event: Event = serde_json::from_value(record["event"].clone()).unwrap();
        assert_eq!(direct(&event), recorded, "record {seq}");
        assert_eq!(general(&event), recorded, "record {seq}");
        assert_eq!(record["prev"], prev.as_str(), "record {seq}");
        assert_eq!(record["seq"], seq as u64);
        let run = record["run"].as_str().unwrap();
        let hash = chain::record_hash(&prev, run, seq as u64, recorded);
        assert_eq!(record["hash"], hash.as_str(), "record {seq}");
        assert_eq!(
            chain::record_hash_quoted(&prev, &format!("\"{run}\""), seq as u64, recorded),
            hash
        );
        prev = hash;
    }
    let v = crate::journal::verify::verify_text(GOLDEN, None);
    assert_eq!(v.events, 6);
    assert!(v.problem.is_none(), "{:?}", v.problem);
}

/// A workflow's text is escaped once and its literal reused while the
/// same text comes again; another text (another file, the same file
/// changed, or a caller's digest that does not match) gets its own, and
/// what is kept stays bounded.
#[test]
fn a_request_texts_literal_is_reused_only_for_the_same_text() {
    let record = |file: &str, text: &str, digest: String| {
        Event::RunStarted(Box::new(RunStarted {
            request: RequestRecord {
                kind: "workflow".into(),
                file: Some(file.into()),
                text: text.into(),
                digest,
                ..RequestRecord::default()
            },
            ..RunStarted::default()
        }))
    };
    let text_of = |n: usize| {
        format!(
            "name: memo{n}\nsteps:\n{}",
            "  - id: \"s\"\n    run: echo \\\"é\u{1}\"\n".repeat(20 + n)
        )
    };
    let first = text_of(0);
    assert!(first.len() >= TEXT_MEMO_MIN);
    for round in 0..3 {
        // The same text again, then the same path with a changed text.
        for n in [0, 0, 1, 0] {
            let text = text_of(n);
            let e = record("w.lobster", &text, digest(text.as_bytes()));
            assert_eq!(direct(&e), general(&e), "round {round}, text {n}");
        }
        // A digest that is not the text's: the text recorded is the text.
        let e = record("w.lobster", &text_of(2), digest(first.as_bytes()));
        assert_eq!(direct(&e), general(&e), "round {round}, another text");
        let e = record("w.lobster", &first, digest(first.as_bytes()));
        assert_eq!(direct(&e), general(&e), "round {round}, the first again");
    }
    // More texts than are kept: each is still its own, and the memo holds
    // no more than its bound (nor texts past the size kept).
    for n in 0..3 * TEXT_MEMO_KEPT {
        let text = text_of(n);
        let e = record("other.lobster", &text, digest(text.as_bytes()));
        assert_eq!(direct(&e), general(&e), "text {n}");
    }
    let big = "x\"".repeat(TEXT_MEMO_MAX);
    let e = record("big.lobster", &big, digest(big.as_bytes()));
    assert_eq!(direct(&e), general(&e));
    let memo = TEXT_MEMO.lock().unwrap();
    assert!(memo.len() <= TEXT_MEMO_KEPT);
    assert!(memo.iter().all(|m| m.text.len() <= TEXT_MEMO_MAX));
}
