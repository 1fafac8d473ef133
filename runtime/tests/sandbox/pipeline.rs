//! Guests as pipeline stages: describe, args and state, plain WASI commands
//! and their cancellation, and the example inbox steps (examples/steps).

use super::common::{args, cache, example_dir, limits, repo, test_guest_dir, wasm};
use super::{assert_host_ok, context, load, snapshot, world};
use lobster::dsl::parse;
use lobster::executor::{run_pipeline, Context, Outcome};
use lobster::sandbox::{self, Grants, SandboxError, StepEnv, StepPath, StepResolver};
use lobster::value::Item;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn describe_args_and_state_through_the_pipeline() {
    let Some(dir) =
        wasm(&test_guest_dir(), "probe.wasm").map(|p| p.parent().unwrap().to_path_buf())
    else {
        return;
    };
    let w = world();
    let mut ctx = context(&w.cwd, &w.root.join("state"), Grants::none());
    ctx.registry = Arc::new(
        lobster::commands::builtin()
            .with_steps(StepResolver::new(StepPath::new(vec![dir.clone()]), cache())),
    );
    let (sink, lines) = sandbox::log::collect();
    ctx.sandbox.log = sink;
    let run = |ctx: &Context, text: &str, input: Vec<Item>| -> Vec<Item> {
        match run_pipeline(&parse(text).unwrap(), 0, input, ctx).unwrap() {
            Outcome::Completed { items, .. } => items,
            other => panic!("{other:?}"),
        }
    };
    // Items flow between built-ins and wasm steps.
    let out = run(
        &ctx,
        "noop | head --n 2 | probe echo",
        vec![json!(1), json!(2), json!(3)],
    );
    assert_eq!(out, [json!(1), json!(2)]);
    // Args round-trip, numbers validated at plan time.
    let out = run(&ctx, "probe args p1 --loud --times 3", vec![]);
    assert_eq!(out[0]["positional"], json!(["args", "p1"]));
    assert_eq!(out[0]["flags"], json!([["loud", "true"], ["times", "3"]]));
    assert_eq!(out[0]["times"], 3.0);
    // A flag its describe does not declare is refused before it runs.
    let err = run_pipeline(&parse("probe args --s=--x").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert_eq!(err.to_string(), "Unknown flag --s for probe");
    let err = run_pipeline(&parse("probe args --times abc").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert!(
        err.to_string().contains("--times must be a number"),
        "{err}"
    );
    // State is scoped to step + run scope.
    assert_eq!(run(&ctx, "probe state", vec![])[0]["counter"], 1);
    assert_eq!(run(&ctx, "probe state", vec![])[0]["counter"], 2);
    ctx.sandbox.state_scope = "other-run".into();
    assert_eq!(run(&ctx, "probe state", vec![])[0]["counter"], 1);
    // Logs reach the sink, tagged with the step.
    run(&ctx, "probe log --loud", vec![]);
    let lines = lines.lock().unwrap().clone();
    assert!(lines
        .iter()
        .any(|l| l.step == "probe" && l.message == "hello from probe"));
    assert!(lines
        .iter()
        .any(|l| l.level == sandbox::Level::Warn && l.message == "loud"));
    // Step errors become runtime errors naming the step.
    let err = run_pipeline(&parse("probe read /nope").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert!(err.to_string().starts_with("step probe failed:"), "{err}");
}

#[test]
fn plain_wasi_commands_are_steps_too() {
    let Some(c) = load(&test_guest_dir(), "cmd-echo.wasm") else {
        return;
    };
    assert_eq!(c.kind(), sandbox::ComponentKind::Command);
    let out = c
        .run(
            "cmd-echo",
            &args(&["--x=1"]),
            &[json!({"a": 1})],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap();
    assert_eq!(
        out,
        [json!({"item": {"a": 1}, "argv": ["cmd-echo", "--x=1"]})]
    );
    let out = c
        .run(
            "cmd-echo",
            &args(&["single"]),
            &[json!(1), json!(2)],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap();
    assert_eq!(out, [json!({"count": 2})]);
    let err = c
        .run(
            "cmd-echo",
            &args(&["fail"]),
            &[],
            &StepEnv::closed(),
            &limits(),
        )
        .unwrap_err();
    match &err {
        SandboxError::Exit { code, stderr, .. } => {
            assert_ne!(*code, 0);
            assert!(stderr.contains("failing on purpose"), "{stderr}");
        }
        other => panic!("expected an exit error, got {other:?}"),
    }
    assert_host_ok();
}

/// A working directory with a copy of examples/mail at `mail/`, and a
/// context whose step path is the built example steps.
fn mailbox(grants: Grants) -> Option<(tempfile::TempDir, Context)> {
    let dir = example_dir();
    wasm(&dir, "inbox_list.wasm")?;
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(cwd.join("mail")).unwrap();
    for entry in std::fs::read_dir(repo().join("examples/mail")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), cwd.join("mail").join(entry.file_name())).unwrap();
    }
    let mut ctx = context(&cwd, &tmp.path().join("state"), grants);
    ctx.registry = Arc::new(
        lobster::commands::builtin()
            .with_steps(StepResolver::new(StepPath::new(vec![dir]), cache())),
    );
    Some((tmp, ctx))
}

fn items_of(ctx: &Context, text: &str) -> lobster::Result<Vec<Item>> {
    match run_pipeline(&parse(text).unwrap(), 0, vec![], ctx)? {
        Outcome::Completed { items, .. } => Ok(items),
        other => panic!("{other:?}"),
    }
}

#[test]
fn example_inbox_pipeline_lists_categorizes_and_triages() {
    let grants = Grants::builder().allow_read("mail").build().unwrap();
    let Some((_tmp, ctx)) = mailbox(grants) else {
        return;
    };
    let items = items_of(&ctx, "inbox.list | inbox.categorize | email.triage").unwrap();
    assert_eq!(items.len(), 10);
    let by_id = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    let budget = by_id("001-budget-review");
    assert_eq!(budget["from"], "Alice Martin <alice@acme.example>");
    assert_eq!(budget["labels"], json!(["inbox"]));
    assert_eq!(budget["category"], "work");
    assert_eq!(budget["triage"], "needs_reply");
    let expect = [
        ("002-newsletter", "newsletter", "fyi"),
        ("003-invoice", "finance", "needs_action"),
        ("004-security-alert", "security", "fyi"),
        ("005-meeting-invite", "meetings", "needs_action"),
        ("006-question-from-friend", "personal", "needs_reply"),
        ("007-ci-failure", "notifications", "needs_action"),
        ("008-receipt", "finance", "fyi"),
        ("009-contract", "personal", "needs_action"),
        ("010-team-update", "work", "fyi"),
    ];
    for (id, category, triage) in expect {
        let item = by_id(id);
        assert_eq!(
            (item["category"].as_str(), item["triage"].as_str()),
            (Some(category), Some(triage)),
            "{id}"
        );
    }
    let only = items_of(
        &ctx,
        "inbox.list --limit 6 | email.triage --only needs_reply",
    )
    .unwrap();
    assert_eq!(only.len(), 2);
    let err = items_of(&ctx, "inbox.list | email.triage --only later").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("step email.triage rejected its arguments"),
        "{err}"
    );
}

#[test]
fn example_steps_refuse_to_run_without_their_capabilities() {
    let Some((_tmp, ctx)) = mailbox(Grants::none()) else {
        return;
    };
    let err = items_of(&ctx, "inbox.list | inbox.categorize").unwrap_err();
    assert_eq!(
        err.to_string(),
        "step inbox.list needs read access to /mail, which this run does not grant (add --allow-read DIR:/mail)"
    );
    let grants = Grants::builder().allow_read("mail").build().unwrap();
    let Some((tmp, ctx)) = mailbox(grants) else {
        return;
    };
    let before = snapshot(tmp.path());
    let err = items_of(&ctx, "inbox.list | inbox.apply --apply --move-by category").unwrap_err();
    assert!(
        err.to_string().contains("needs write access to /mail"),
        "{err}"
    );
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn example_inbox_apply_plans_then_applies_inside_the_grant_only() {
    let grants = Grants::builder().allow_write("mail").build().unwrap();
    let Some((tmp, ctx)) = mailbox(grants) else {
        return;
    };
    let before = snapshot(tmp.path());
    let pipeline = "inbox.list | inbox.categorize | email.triage | inbox.apply --move-by category";
    let plan = items_of(&ctx, pipeline).unwrap();
    assert_eq!(plan.len(), 10);
    assert!(plan
        .iter()
        .all(|p| p["applied"] == false && p["changes"] == true));
    let invoice = plan.iter().find(|p| p["id"] == "003-invoice").unwrap();
    assert_eq!(invoice["move_to"], "finance");
    assert_eq!(invoice["add_labels"], json!(["finance", "needs_action"]));
    assert_eq!(
        snapshot(tmp.path()),
        before,
        "a dry run must not change files"
    );

    let done = items_of(&ctx, &format!("{pipeline} --apply")).unwrap();
    assert!(done.iter().all(|p| p["applied"] == true));
    let mail = ctx.cwd.join("mail");
    let moved = std::fs::read_to_string(mail.join("finance/003-invoice.eml")).unwrap();
    assert!(
        moved.contains("Labels: inbox, finance, needs_action\n"),
        "{moved}"
    );
    assert!(!mail.join("003-invoice.eml").exists());
    // Everything that changed is inside the granted directory.
    let after = snapshot(tmp.path());
    for (path, meta) in &before {
        if !path.starts_with(&mail) {
            assert_eq!(after.get(path), Some(meta), "{} changed", path.display());
        }
    }
    for path in after.keys() {
        assert!(
            path.starts_with(&mail) || before.contains_key(path),
            "{} appeared",
            path.display()
        );
    }
    // Listing the moved folder finds the relabelled message.
    let listed = items_of(&ctx, "inbox.list --folder finance").unwrap();
    assert_eq!(listed.len(), 2);
}

#[test]
fn commands_and_cancellation_through_the_pipeline() {
    let Some(dir) =
        wasm(&test_guest_dir(), "cmd-echo.wasm").map(|p| p.parent().unwrap().to_path_buf())
    else {
        return;
    };
    let w = world();
    let mut ctx = context(&w.cwd, &w.root.join("state"), Grants::none());
    ctx.registry = Arc::new(
        lobster::commands::builtin()
            .with_steps(StepResolver::new(StepPath::new(vec![dir]), cache())),
    );
    // A plain wasi:cli/command resolved by file name, between built-ins.
    let out = match run_pipeline(
        &parse("head --n 1 | cmd-echo --tag=x").unwrap(),
        0,
        vec![json!(1), json!(2)],
        &ctx,
    )
    .unwrap()
    {
        Outcome::Completed { items, .. } => items,
        other => panic!("{other:?}"),
    };
    assert_eq!(out, [json!({"item": 1, "argv": ["cmd-echo", "--tag=x"]})]);
    let cmd = ctx.registry.resolve("cmd-echo").unwrap().unwrap();
    assert!(cmd.help().contains("wasi:cli/command"));
    assert_eq!(cmd.digest().map(str::len), Some(64));
    // The run's own deadline (armed by the CLI) stops a spinning step with
    // the run's timeout error, naming the step, where it was and the limit.
    ctx.limits.steps.fuel = u64::MAX / 4;
    ctx.cancel.arm_deadline(Duration::from_millis(300));
    let start = Instant::now();
    let err = run_pipeline(&parse("hostile loop").unwrap(), 0, vec![], &ctx).unwrap_err();
    assert_eq!(
        err.to_string(),
        "lobster runtime timed out: step hostile was in run when the run's deadline (300ms) passed"
    );
    // Loading and compiling `hostile` counts here too; under CI's load that
    // alone has taken over 10 s, so the bound only says "it did not spin on".
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_host_ok();
}
