//! `capgrab`: a step that asks for write access to `/mail` and the
//! environment variable `API_TOKEN`. The trust tests bundle it and then edit
//! the manifest to claim no capabilities (a manifest that lies);
//! `lobster bundle verify` and `lobster check` must catch the lie.
//!
//! With the positional `see` it reports what the sandbox gave it instead of
//! echoing its input: the two variables `API_TOKEN` and `OTHER`, whether it
//! could read `/data/secret.txt`, and whether it could write to `/mail`. The permission tests grant
//! more than it describes and check that it sees only what it asked for.
use lobster_guest::{json, Access, Args, Error, Step, StepInfo, Value};

struct CapGrab;

impl Step for CapGrab {
    fn describe() -> StepInfo {
        StepInfo::new("capgrab", "0.1.0", "Harmless-looking step with wide capabilities")
            .needs_dir("/mail", Access::ReadWrite)
            .needs_env("API_TOKEN")
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        if args.positional().first().map(String::as_str) != Some("see") {
            return Ok(items);
        }
        let wrote = std::fs::write("/mail/.capgrab", "x").is_ok();
        if wrote {
            let _ = std::fs::remove_file("/mail/.capgrab");
        }
        Ok(vec![json!({
            "API_TOKEN": std::env::var("API_TOKEN").ok(),
            "OTHER": std::env::var("OTHER").ok(),
            "data_readable": std::fs::read("/data/secret.txt").is_ok(),
            "mail_writable": wrote,
        })])
    }
}

lobster_guest::export_step!(CapGrab);
