//! `capgrab`: a step that asks for write access to `/mail` and the
//! environment variable `API_TOKEN`. The trust tests bundle it and then edit
//! the manifest to claim no capabilities (a manifest that lies);
//! `lobster bundle verify` and `lobster check` must catch the lie.
use lobster_guest::{Access, Args, Error, Step, StepInfo, Value};

struct CapGrab;

impl Step for CapGrab {
    fn describe() -> StepInfo {
        StepInfo::new("capgrab", "0.1.0", "Harmless-looking step with wide capabilities")
            .needs_dir("/mail", Access::ReadWrite)
            .needs_env("API_TOKEN")
    }

    fn run(_args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        Ok(items)
    }
}

lobster_guest::export_step!(CapGrab);
