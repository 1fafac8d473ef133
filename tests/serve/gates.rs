//! One gate, one decision, every door: `/v1/resume`, `/v1/runs/{id}/resume`,
//! `/mcp` and the approval page all decide a gate through the one gate
//! function (`app::gate::take`). Racers over all of them get exactly one
//! 2xx and one execution; a token in another spelling is `Invalid token`
//! everywhere; an answer the gate's schema refuses leaves the gate open.

use super::*;
use base64::Engine as _;
use std::sync::{Arc, Barrier};

const T: &str = "gates-token";

/// A server with one trusted tenant `gates` that may approve its own runs,
/// with room for many racers.
fn gate_server(dir: &Path) -> Server {
    std::fs::write(dir.join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
    let config = format!(
        "listen = \"127.0.0.1:9\"\nstate = \"state\"\n\
[[tenant]]\nname = \"gates\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\n\
max_concurrent_runs = 128\nrequests_per_minute = 100000\n",
        sha(T)
    );
    let path = dir.join("serve.toml");
    std::fs::write(&path, config).unwrap();
    start(&path)
}

/// Start `pipeline` and return the paused run's id and its envelope.
fn paused_run(s: &Server, pipeline: &str) -> (String, Value) {
    let r = s.run(T, json!({ "pipeline": pipeline }));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert!(
        v["status"] == "needs_approval" || v["status"] == "needs_input",
        "{v}"
    );
    (v["runId"].as_str().unwrap().to_string(), v)
}

fn token_of(v: &Value) -> String {
    v["requiresApproval"]["resumeToken"]
        .as_str()
        .or_else(|| v["requiresInput"]["resumeToken"].as_str())
        .unwrap()
        .to_string()
}

/// One decision through door `door` (0..4): whether it won (2xx, or an MCP
/// result that is not an error) and what it answered.
fn decide_through(s: &Server, door: usize, id: &str, token: &str, link: &str) -> (bool, String) {
    match door {
        0 => {
            let r = s.call(
                "POST",
                "/v1/resume",
                T,
                Some(json!({"token": token, "approve": true})),
            );
            (r.status / 100 == 2, format!("{} {}", r.status, r.body))
        }
        1 => {
            let r = s.call(
                "POST",
                &format!("/v1/runs/{id}/resume"),
                T,
                Some(json!({"approve": true})),
            );
            (r.status / 100 == 2, format!("{} {}", r.status, r.body))
        }
        2 => {
            let r = mcp_call(
                s,
                T,
                "lobster_resume",
                json!({"token": token, "approve": true}),
            );
            (r["isError"] != true, r.to_string())
        }
        _ => {
            let r = s.form(link, "decision=approve");
            (r.status / 100 == 2, format!("{} {}", r.status, r.body))
        }
    }
}

#[test]
fn thirty_deciders_over_every_door_decide_a_gate_once_in_each_of_20_trials() {
    let dir = tempfile::tempdir().unwrap();
    let s = gate_server(dir.path());
    const TRIALS: usize = 20;
    const RACERS: usize = 30;
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    for trial in 0..TRIALS {
        let mark = marks.join(format!("{trial}"));
        let (id, v) = paused_run(
            &s,
            &format!(
                "exec --json --shell 'echo [1]' | approve --prompt go? | exec --shell 'echo ran >> {}'",
                mark.display()
            ),
        );
        let token = token_of(&v);
        let link = s.link_for(T, &id);
        let barrier = Arc::new(Barrier::new(RACERS));
        let results: Vec<(bool, String)> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..RACERS)
                .map(|i| {
                    let (s, id, token, link) = (&s, &id, &token, &link);
                    let barrier = barrier.clone();
                    sc.spawn(move || {
                        barrier.wait();
                        decide_through(s, i % 4, id, token, link)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<&String> = results.iter().filter(|r| r.0).map(|r| &r.1).collect();
        assert_eq!(won.len(), 1, "trial {trial}: {results:#?}");
        for (i, (ok, answer)) in results.iter().enumerate() {
            if *ok {
                continue;
            }
            // Losers: 409 over the API, 410 on the page (its link or its
            // gate is spent), an error result over MCP.
            let expected = match i % 4 {
                0 | 1 => answer.starts_with("409 "),
                2 => answer.contains("isError"),
                _ => answer.starts_with("410 ") || answer.starts_with("409 "),
            };
            assert!(expected, "trial {trial}, door {}: {answer}", i % 4);
        }
        let ran = std::fs::read_to_string(&mark).unwrap_or_default();
        assert_eq!(ran.lines().count(), 1, "trial {trial}: ran {ran:?}");
        let rec = s.settled(T, &id);
        assert_eq!(rec["status"], "ok", "trial {trial}: {rec}");
    }
}

#[test]
fn a_token_in_another_spelling_is_invalid_at_every_door_and_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = gate_server(dir.path());
    let mark = dir.path().join("mark");
    let (id, v) = paused_run(
        &s,
        &format!(
            "exec --json --shell 'echo [1]' | approve --prompt go? | exec --shell 'echo ran >> {}'",
            mark.display()
        ),
    );
    let token = token_of(&v);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload: serde_json::Map<String, Value> =
        serde_json::from_slice(&b64.decode(&token).unwrap()).unwrap();
    let mut reordered = String::from("{");
    for (i, (k, v)) in payload.iter().rev().enumerate() {
        if i > 0 {
            reordered.push(',');
        }
        reordered.push_str(&format!("{}:{v}", json!(k)));
    }
    reordered.push('}');
    let spaced = serde_json::to_string_pretty(&payload).unwrap();
    let variants = [
        format!("{token}="),
        format!("{token}=="),
        format!(" {token}"),
        format!("{token} "),
        b64.encode(reordered.as_bytes()),
        b64.encode(spaced.as_bytes()),
    ];
    for variant in &variants {
        let r = s.call(
            "POST",
            "/v1/resume",
            T,
            Some(json!({"token": variant, "approve": true})),
        );
        assert_eq!(r.status, 400, "{variant:?}: {}", r.body);
        assert!(r.body.contains("Invalid token"), "{variant:?}: {}", r.body);
        let m = mcp_call(
            &s,
            T,
            "lobster_resume",
            json!({"token": variant, "approve": true}),
        );
        assert_eq!(m["isError"], true, "{variant:?}: {m}");
        assert!(m.to_string().contains("Invalid token"), "{variant:?}: {m}");
    }
    assert!(!mark.exists(), "a variant decided the gate");
    assert_eq!(s.get_run(T, &id).json()["status"], "needs_approval");
    // The token as issued still decides it, once.
    let r = s.call(
        "POST",
        "/v1/resume",
        T,
        Some(json!({"token": token, "approve": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(std::fs::read_to_string(&mark).unwrap().lines().count(), 1);
}

#[test]
fn an_answer_the_schema_refuses_leaves_the_gate_open_over_http_and_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let s = gate_server(dir.path());
    let mark = dir.path().join("mark");
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    let (id, v) = paused_run(
        &s,
        &format!(
            "exec --json --shell 'echo [1]' | ask --prompt 'How many?' --schema '{schema}' | exec --shell 'echo ran >> {}'",
            mark.display()
        ),
    );
    assert_eq!(v["status"], "needs_input", "{v}");
    let token = token_of(&v);
    let bad = [json!({"n": "x"}), json!({}), json!({"m": 1})];
    for answer in &bad {
        let r = s.call(
            "POST",
            &format!("/v1/runs/{id}/resume"),
            T,
            Some(json!({ "response": answer })),
        );
        assert_eq!(r.status, 400, "{answer}: {}", r.body);
        assert!(r.body.contains("schema"), "{answer}: {}", r.body);
        let r = s.call(
            "POST",
            "/v1/resume",
            T,
            Some(json!({"token": token, "response": answer})),
        );
        assert_eq!(r.status, 400, "{answer}: {}", r.body);
        let m = mcp_call(
            &s,
            T,
            "lobster_resume",
            json!({"token": token, "response": answer}),
        );
        assert_eq!(m["isError"], true, "{answer}: {m}");
        // An approval where input is asked: refused the same way.
        let r = s.call(
            "POST",
            &format!("/v1/runs/{id}/resume"),
            T,
            Some(json!({"approve": true})),
        );
        assert_eq!(r.status, 400, "{}", r.body);
        let rec = s.get_run(T, &id).json();
        assert_eq!(rec["status"], "needs_input", "{answer}: {rec}");
    }
    assert!(
        !mark.exists(),
        "an invalid answer ran the step after the gate"
    );
    // The valid answer is taken, once.
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        T,
        Some(json!({"response": {"n": 3}})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    let m = mcp_call(
        &s,
        T,
        "lobster_resume",
        json!({"token": token, "response": {"n": 4}}),
    );
    assert_eq!(m["isError"], true, "{m}");
    assert_eq!(std::fs::read_to_string(&mark).unwrap().lines().count(), 1);
    assert_eq!(s.get_run(T, &id).json()["status"], "ok");
}
