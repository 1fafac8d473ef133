//! `noop`: returns its input items unchanged (benchmark baseline).
use lobster_guest::{Args, Error, Step, StepInfo, Value};

struct Noop;

impl Step for Noop {
    fn describe() -> StepInfo {
        StepInfo::new("noop", "0.1.0", "Return the input items unchanged")
    }

    fn run(_args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        Ok(items)
    }
}

lobster_guest::export_step!(Noop);
