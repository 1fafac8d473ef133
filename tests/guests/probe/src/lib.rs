//! `probe`: exercises host functions and reports what the sandbox looks like.
//! Modes (first positional): `echo` (default), `state`, `log`, `world`,
//! `env NAME`, `write PATH TEXT`, `read PATH`, `args`, `put KEY TEXT`, `get KEY`.
use lobster_guest::{json, log, state, Access, Args, Error, Flag, Step, StepInfo, Value};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

struct Probe;

impl Step for Probe {
    fn describe() -> StepInfo {
        StepInfo::new("probe", "0.2.0", "Report what the sandbox looks like")
            .flag(Flag::switch("loud", "Log at warn level"))
            .flag(Flag::number("times", "How often").default("1"))
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let pos = args.positional();
        match pos.first().map(String::as_str).unwrap_or("echo") {
            "echo" => Ok(items),
            "args" => Ok(vec![json!({
                "positional": pos,
                "flags": args.flags.iter().map(|(k, v)| json!([k, v.as_str()])).collect::<Vec<_>>(),
                "times": args.number("times")?,
            })]),
            "state" => {
                let n = state::get("counter")?.and_then(|v| v.as_u64()).unwrap_or(0) + 1;
                state::set("counter", &json!(n))?;
                Ok(vec![json!({ "counter": n })])
            }
            "log" => {
                log::info("hello from probe");
                if args.is_set("loud") {
                    log::warn("loud");
                }
                Ok(items)
            }
            "world" => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let hash = RandomState::new().hash_one(42u64);
                let env: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
                let root = std::fs::read_dir("/").map(|d| d.count()).unwrap_or(0);
                Ok(vec![
                    json!({ "now": now, "hash": hash.to_string(), "env": env, "root_entries": root }),
                ])
            }
            "env" => {
                let name = pos.get(1).ok_or_else(|| Error::invalid_args("env NAME"))?;
                Ok(vec![json!({ "value": std::env::var(name).ok() })])
            }
            "write" => {
                let (Some(path), Some(text)) = (pos.get(1), pos.get(2)) else {
                    return Err(Error::invalid_args("write PATH TEXT"));
                };
                std::fs::write(path, text)?;
                Ok(vec![json!({ "wrote": path })])
            }
            "put" => {
                let (Some(key), Some(text)) = (pos.get(1), pos.get(2)) else {
                    return Err(Error::invalid_args("put KEY TEXT"));
                };
                state::set(key, &json!(text))?;
                Ok(vec![json!({ "put": key })])
            }
            "get" => {
                let key = pos.get(1).ok_or_else(|| Error::invalid_args("get KEY"))?;
                Ok(vec![json!({ "value": state::get(key)? })])
            }
            "read" => {
                let path = pos.get(1).ok_or_else(|| Error::invalid_args("read PATH"))?;
                Ok(vec![json!({ "text": std::fs::read_to_string(path)? })])
            }
            other => Err(Error::invalid_args(format!("unknown mode {other}"))),
        }
    }
}

lobster_guest::export_step!(Probe);

#[allow(dead_code)]
fn _unused(_: Access) {}
