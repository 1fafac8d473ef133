//! `net`: a step that tries to open a TCP connection with `std::net`, which
//! makes the component import `wasi:sockets/*`. `lobster check` must reject
//! it by naming the interface (the host never grants network access).
use lobster_guest::{Args, Error, Step, StepInfo, Value};

struct Net;

impl Step for Net {
    fn describe() -> StepInfo {
        StepInfo::new("net", "0.1.0", "Try to phone home over TCP")
    }

    fn run(_args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        match std::net::TcpStream::connect("93.184.216.34:80") {
            Ok(_) => Err(Error::failed("connected: the sandbox leaked the network")),
            Err(_) => Ok(items),
        }
    }
}

lobster_guest::export_step!(Net);
