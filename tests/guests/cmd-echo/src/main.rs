//! `cmd-echo`: a plain `wasi:cli/command` step. Reads a JSON array of items
//! on stdin and writes them back with `argv` added; `fail` as the first
//! argument exits with status 3 after writing to stderr; `single` writes one
//! JSON object instead of an array; `sleep MS` waits that long first, or
//! `$CMD_ECHO_SLEEP_MS` when the run grants that variable (a slow step that
//! still acts on nothing: a pure step for recovery tests).
use serde_json::{json, Value};
use std::io::Read;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("stdin");
    let items: Vec<Value> = serde_json::from_str(&input).expect("stdin is a JSON array");
    match argv.get(1).map(String::as_str) {
        Some("fail") => {
            eprintln!("cmd-echo: failing on purpose");
            std::process::exit(3);
        }
        Some("sleep") => {
            let ms: u64 = std::env::var("CMD_ECHO_SLEEP_MS")
                .ok()
                .or_else(|| argv.get(2).cloned())
                .and_then(|m| m.parse().ok())
                .unwrap_or(1000);
            std::thread::sleep(std::time::Duration::from_millis(ms));
            println!("{}", serde_json::to_string(&items).expect("serialise"));
        }
        Some("single") => println!("{}", json!({ "count": items.len() })),
        _ => {
            let out: Vec<Value> = items
                .into_iter()
                .map(|item| json!({ "item": item, "argv": argv }))
                .collect();
            println!("{}", serde_json::to_string(&out).expect("serialise"));
        }
    }
}
