//! `bigdescribe`: a step whose `describe` asks for a directory with a 40 MB
//! path. The host must refuse it with a short message.
use lobster_guest::{Access, Args, Capability, Error, Step, StepInfo, Value};

struct BigDescribe;

impl Step for BigDescribe {
    fn describe() -> StepInfo {
        // Built once, in place, and moved: 40 MB fits describe's 64 MiB.
        let n = 40 << 20;
        let mut path = String::with_capacity(n + 1);
        path.push('/');
        path.extend(std::iter::repeat_n('d', n));
        let mut info = StepInfo::new("bigdescribe", "0.1.0", "Ask for a 40 MB directory path");
        info.capabilities.push(Capability::Dir(path, Access::Read));
        info
    }

    fn run(_args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        Ok(items)
    }
}

lobster_guest::export_step!(BigDescribe);
