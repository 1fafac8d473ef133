//! The data commands through the binary, on edge cases: missing keys, nulls,
//! mixed types, empty input.

use crate::common::Env;
use serde_json::{json, Value};

/// Run `<source of items> | <stages>` in tool mode and return the output.
fn out(env: &Env, items: &str, stages: &str) -> Value {
    let r = env.tool(&format!("{} | {stages}", env.source(items)));
    assert_eq!(r.code, 0, "{stages}: {r:?}");
    r.json()["output"].clone()
}

const MIXED: &str = r#"[{"id":1,"n":5,"tag":"a"},{"id":2,"n":"5","tag":null},{"id":3,"tag":"b"},{"id":4,"n":true},{"id":5,"n":null,"x":{"y":1}}]"#;

#[test]
fn where_uses_loose_comparison() {
    let env = Env::new();
    let ids = |v: Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(out(&env, MIXED, "where n==5")), [json!(1), json!(2)]);
    assert_eq!(ids(out(&env, MIXED, "where n==1")), [json!(4)]);
    assert_eq!(ids(out(&env, MIXED, "where n==null")), [json!(3), json!(5)]);
    assert_eq!(
        ids(out(&env, MIXED, "where n<10")),
        [json!(1), json!(2), json!(4), json!(5)]
    );
    assert_eq!(ids(out(&env, MIXED, "where x.y=1")), [json!(5)]);
    assert_eq!(out(&env, "[]", "where n>1"), json!([]));
    let r = env.tool(&format!("{} | where n", env.source(MIXED)));
    assert_eq!(
        (r.code, r.json()["error"]["message"].clone()),
        (1, json!("Invalid where expression: n"))
    );
    let r = env.tool(&format!("{} | where", env.source(MIXED)));
    assert_eq!(
        r.json()["error"]["message"],
        "where requires an expression (e.g. field=value)"
    );
}

#[test]
fn sort_puts_null_and_missing_last_both_ways() {
    let env = Env::new();
    let ids = |v: Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_i64().unwrap())
            .collect::<Vec<_>>()
    };
    let items = r#"[{"id":1,"k":3},{"id":2},{"id":3,"k":1},{"id":4,"k":null},{"id":5,"k":3}]"#;
    assert_eq!(ids(out(&env, items, "sort --key k")), [3, 1, 5, 2, 4]);
    assert_eq!(
        ids(out(&env, items, "sort --key k --desc")),
        [1, 5, 3, 2, 4]
    );
    // What V8 gives for the reference's comparator on mixed types.
    assert_eq!(
        out(&env, r#"[3,"10",1,null,"a"]"#, "sort"),
        json!([1, "10", 3, "a", null])
    );
    assert_eq!(out(&env, "[]", "sort --key k"), json!([]));
}

#[test]
fn pick_dedupe_group_map() {
    let env = Env::new();
    assert_eq!(
        out(&env, MIXED, "pick id,tag | head --n 3"),
        json!([{"id":1,"tag":"a"},{"id":2,"tag":null},{"id":3,"tag":"b"}])
    );
    assert_eq!(
        out(&env, r#"[1,"x",null,{"a":1}]"#, "pick a"),
        json!([1, "x", null, {"a":1}])
    );
    assert_eq!(
        out(&env, r#"[1,1,"1",{"a":1},{"a":1}]"#, "dedupe"),
        json!([1, "1", {"a":1}])
    );
    assert_eq!(
        out(
            &env,
            r#"[{"k":1,"i":1},{"i":2},{"k":1,"i":3},{"i":4}]"#,
            "dedupe --key k"
        ),
        json!([{"k":1,"i":1},{"i":2}])
    );
    let groups = out(
        &env,
        r#"[{"t":"a"},{"t":"b"},{"t":"a"},{}]"#,
        "groupBy --key t",
    );
    assert_eq!(
        groups[0],
        json!({"key":"a","items":[{"t":"a"},{"t":"a"}],"count":2})
    );
    assert_eq!(
        groups[2],
        json!({"items":[{}],"count":1}),
        "an undefined key is omitted"
    );
    let r = env.tool(&format!("{} | groupBy", env.source("[]")));
    assert_eq!(r.json()["error"]["message"], "groupBy requires --key");
    assert_eq!(
        out(
            &env,
            r#"[{"id":7,"o":{"p":1}},"s"]"#,
            "map label=id-{{id}} deep={{o.p}} missing={{nope}}"
        ),
        json!([{"id":7,"o":{"p":1},"label":"id-7","deep":"1","missing":""},{"value":"s","label":"id-","deep":"","missing":""}])
    );
    assert_eq!(
        out(&env, r#"[{"a":1},{"b":2},3]"#, "map --unwrap a"),
        json!([1, null, null])
    );
    let r = env.tool(&format!("{} | map --wrap a --unwrap b", env.source("[]")));
    assert_eq!(
        r.json()["error"]["message"],
        "map cannot use both --wrap and --unwrap"
    );
}

#[test]
fn template_and_filters() {
    let env = Env::new();
    assert_eq!(
        out(&env, r#"[{"n":"ada","t":1700000000000,"xs":[1,2]},{}]"#, "template --text '{{n | upper}} {{t | date YYYY-MM-DD}} {{xs | join +}} {{missing | default none}}'"),
        // `date` of a missing value is String(undefined), as in JavaScript.
        json!(["ADA 2023-11-14 1+2 none", " undefined  none"])
    );
    let r = env.tool(&format!(
        "{} | template --text '{{{{a | shout}}}}'",
        env.source("[{}]")
    ));
    assert_eq!(
        r.json()["error"]["message"],
        "Unknown template filter: shout"
    );
}

#[test]
fn renderers_in_human_mode() {
    let env = Env::new();
    let r = env.run(&[&format!(
        "{} | table",
        env.source(r#"[{"a":1,"b":"x\ny"},{"a":22}]"#)
    )]);
    assert_eq!(r.stdout, "a    b  \n---  ---\n1    x y\n22      \n");
    let r = env.run(&[&format!("{} | table", env.source("[]"))]);
    assert_eq!(r.stdout, "(no results)\n");
    let r = env.run(&[&format!("{} | json", env.source(r#"[{"2":1,"a":2}]"#))]);
    assert_eq!(r.stdout, "[\n  {\n    \"2\": 1,\n    \"a\": 2\n  }\n]\n");
}

#[test]
fn state_commands_round_trip() {
    let env = Env::new();
    assert_eq!(
        out(&env, r#"[{"a":1}]"#, "state.set My/Key"),
        json!([{"a":1}])
    );
    assert_eq!(
        env.tool("state.get my_key").json()["output"],
        json!([{"a":1}])
    );
    assert_eq!(
        env.tool("state.get nothing-here").json()["output"],
        json!([null])
    );
    let first = out(&env, "[1,2]", "diff.last --key d");
    assert_eq!(
        first,
        json!([{"kind":"diff.last","key":"d","changed":true,"before":null,"after":[1,2]}])
    );
    let second = out(&env, "[1,2]", "diff.last --key d");
    assert_eq!(second[0]["changed"], json!(false));
    assert_eq!(
        env.tool("state.get").json()["error"]["message"],
        "state.get requires a key"
    );
}

#[test]
fn commands_list_describes_every_command() {
    let env = Env::new();
    let list = env.tool("commands.list").json()["output"].clone();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for expected in [
        "approve",
        "ask",
        "exec",
        "head",
        "where",
        "sort",
        "groupBy",
        "state.get",
        "commands.list",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let exec = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "exec")
        .unwrap();
    assert_eq!(exec["sideEffects"], json!(["local_exec"]));
}
