//! The journal on both stores (files and PostgreSQL: `LOBSTER_TEST_PG_URL`,
//! see `runtime/tests/store_conformance.rs`): chain, listing, paging, tenants, pruning,
//! a resumed chain.

use super::verify::verify_text;
use super::*;
use crate::state::journal::RunFilter;
use crate::state::{random_hex, StateStore};

#[path = "../../../tests/own_pg.rs"]
#[allow(dead_code)] // only the shared URL is used here
mod own_pg;
use own_pg::pg_url;

#[derive(Clone, Copy)]
enum Kind {
    Files,
    Pg,
}

fn store(kind: Kind, dir: &std::path::Path) -> Option<StateStore> {
    Some(match kind {
        Kind::Files => StateStore::new(dir.join("state")),
        Kind::Pg => StateStore::postgres(&pg_url()?, dir.join("local"))
            .for_tenant(&format!("test-{}", random_hex(6))),
    })
}

fn started(run: &str, name: &str) -> RunStarted {
    RunStarted {
        run_id: run.into(),
        at: now_rfc3339(),
        door: "cli".into(),
        tenant: "t".into(),
        trust: "trusted".into(),
        policy_digest: digest(b"p"),
        request: RequestRecord::new("pipeline", None, name, serde_json::Value::Null),
        ..RunStarted::default()
    }
}

fn a_run(s: &StateStore, name: &str, status: &str) -> String {
    let id = new_run_id();
    let j = Journal::start(s, started(&id, name)).unwrap();
    j.append(Event::Step(Step {
        id: "0".into(),
        step_kind: "builtin".into(),
        wall_ms: 1,
        ok: true,
        replayable: true,
        ..Step::default()
    }))
    .unwrap();
    if status == "needs_approval" {
        j.append(Event::GateOpened(GateOpened {
            gate: "approval".into(),
            step: "0".into(),
            prompt: "ok?".into(),
            approval_id: Some("0a1b2c3d".into()),
            ..GateOpened::default()
        }))
        .unwrap();
    }
    j.end(status, None).unwrap();
    id
}

fn chain_list_page_and_prune(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let Some(s) = store(kind, dir.path()) else {
        return;
    };
    let mut ids = Vec::new();
    for (i, status) in ["ok", "error", "needs_approval", "ok"].iter().enumerate() {
        ids.push(a_run(&s, &format!("run {i}"), status));
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    for id in &ids {
        let text = s.journal_text(id).unwrap().unwrap();
        let v = verify_text(&text, Some(id));
        assert_eq!(v.problem, None, "{id}");
        let sum = s.journal_summary(id).unwrap().unwrap();
        assert_eq!((sum.events, sum.head.as_str()), (v.events, v.head.as_str()));
    }
    let all = s.journal_runs(&RunFilter::default()).unwrap();
    let listed: Vec<&str> = all.iter().map(|r| r.run_id.as_str()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    assert_eq!(all[1].gate.as_deref(), Some("0a1b2c3d"));
    assert_eq!(all[1].status, "needs_approval");
    let page = s
        .journal_runs(&RunFilter {
            before: Some((all[1].started_at.clone(), all[1].run_id.clone())),
            limit: Some(1),
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(page[0].run_id, ids[1]);
    let errors = s
        .journal_runs(&RunFilter {
            status: Some("error".into()),
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(errors.len(), 1);
    // Keep the newest settled run; the paused one is never pruned.
    let pruned = s.journal_prune("1970-01-01T00:00:00Z", 1).unwrap();
    assert_eq!(pruned.len(), 2, "{pruned:?}");
    assert!(s.journal_text(&ids[0]).unwrap().is_none());
    assert!(s.journal_text(&ids[2]).unwrap().is_some());
    let tomb = s.journal_summary(&ids[0]).unwrap().unwrap();
    assert_eq!(tomb.status, "pruned");
    assert_eq!(tomb.events, 3);
}

fn tenants_see_only_their_runs(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let Some(s) = store(kind, dir.path()) else {
        return;
    };
    let other = s.for_tenant(&format!("other-{}", random_hex(4)));
    let id = a_run(&s, "mine", "ok");
    assert_eq!(s.journal_runs(&RunFilter::default()).unwrap().len(), 1);
    assert!(other
        .journal_runs(&RunFilter::default())
        .unwrap()
        .is_empty());
    assert!(other.journal_text(&id).unwrap().is_none());
    assert!(other.journal_summary(&id).unwrap().is_none());
}

fn a_resumed_run_continues_its_chain(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let Some(s) = store(kind, dir.path()) else {
        return;
    };
    let id = a_run(&s, "paused", "needs_approval");
    let text = s.journal_text(&id).unwrap().unwrap();
    let v = verify_text(&text, Some(&id));
    let head = Head {
        run: id.clone(),
        events: v.events - 1,
        hash: v.hash_at(v.events - 2).unwrap(),
        digests: DigestRule::default(),
    };
    let planned = Journal::planned("serve", None);
    planned
        .continue_at(&s, &head, RunResumed::default())
        .unwrap();
    planned
        .append(Event::Decision(Decision {
            decision: "approve".into(),
            approver: Some("alice".into()),
            decided_by: Some("approver alice".into()),
            door: "serve".into(),
            response_digest: None,
        }))
        .unwrap();
    planned.end("ok", None).unwrap();
    let text = s.journal_text(&id).unwrap().unwrap();
    let v = verify_text(&text, Some(&id));
    assert_eq!(v.problem, None);
    assert_eq!(v.events, 7);
    assert_eq!(v.ended.as_deref(), Some("ok"));
    let sum = s.journal_summary(&id).unwrap().unwrap();
    assert_eq!((sum.status.as_str(), sum.gate), ("ok", None));
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod files {
            $( #[test] fn $name() { super::$name(super::Kind::Files) } )*
        }
        mod postgres {
            $( #[test] fn $name() { super::$name(super::Kind::Pg) } )*
        }
    };
}

both!(
    chain_list_page_and_prune,
    tenants_see_only_their_runs,
    a_resumed_run_continues_its_chain,
);
