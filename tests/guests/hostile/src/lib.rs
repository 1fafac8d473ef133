//! `hostile`: a step that misbehaves on purpose; the first positional picks
//! how. Escape attempts return `failed("denied: …")` when the sandbox stops
//! them and succeed (which the tests treat as a breach) otherwise.
use lobster_guest::{json, log, Args, Error, Step, StepInfo, Value};
use std::hint::black_box;
use std::io::Write;

struct Hostile;

#[allow(unconditional_recursion)]
fn recurse(n: u64, pad: [u64; 16]) -> u64 {
    let pad = black_box(pad);
    black_box(recurse(n + 1, pad)) + pad[(n % 16) as usize]
}

fn denied<T>(what: &str, r: std::io::Result<T>) -> Result<Vec<Value>, Error> {
    match r {
        Ok(_) => Ok(vec![json!({ "breach": what })]),
        Err(e) => Err(Error::failed(format!("denied: {what}: {e}"))),
    }
}

impl Step for Hostile {
    fn describe() -> StepInfo {
        StepInfo::new("hostile", "0.1.0", "Misbehave on purpose (sandbox tests)")
    }

    fn run(args: Args, _items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let pos = args.positional();
        let arg = |i: usize| pos.get(i).cloned().unwrap_or_default();
        match arg(0).as_str() {
            "loop" => {
                let mut x = 0u64;
                loop {
                    x = black_box(x.wrapping_add(1));
                }
            }
            "grow" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    let mut chunk = vec![0u8; 8 << 20];
                    chunk[0] = 1;
                    hoard.push(black_box(chunk));
                }
            }
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Ok(vec![json!({ "breach": "slept an hour" })])
            }
            "recurse" => Ok(vec![json!(recurse(0, [1; 16]))]),
            "flood-stdout" => loop {
                let _ = std::io::stdout().write_all(&[b'x'; 4096]);
            },
            "flood-stderr" => loop {
                eprintln!("{}", "e".repeat(1000));
            },
            "flood-log" => loop {
                log::info(&"l".repeat(1000));
            },
            "big-result" => Ok((0..100_000)
                .map(|i| json!({ "i": i, "pad": "xxxxxxxxxx" }))
                .collect()),
            "panic" => panic!("hostile step panicked on purpose"),
            // A failure message of 100 MB: the host's error must stay small.
            "huge-fail" => Err(Error::failed("F".repeat(100 << 20))),
            // Half a million zeros (just under the 1 MiB state cap) nested
            // 100 arrays deep: pretty-printed, every zero gets a line with
            // 200 spaces of indentation, over 100 MB on disk.
            "deep-state" => {
                let mut v = json!(vec![0u8; ((1 << 20) - 1000) / 2]);
                for _ in 0..100 {
                    v = json!([v]);
                }
                lobster_guest::state::set("deep", &v)?;
                Ok(vec![json!({ "stored": "deep" })])
            }
            "trap" => {
                #[cfg(target_arch = "wasm32")]
                core::arch::wasm32::unreachable();
                #[allow(unreachable_code)]
                Ok(vec![])
            }
            "read" => denied(&format!("read {}", arg(1)), std::fs::read(arg(1))),
            "write" => denied(
                &format!("write {}", arg(1)),
                std::fs::write(arg(1), b"escaped"),
            ),
            "mkdir" => denied(&format!("mkdir {}", arg(1)), std::fs::create_dir(arg(1))),
            "list" => denied(&format!("list {}", arg(1)), std::fs::read_dir(arg(1))),
            "env" => match std::env::var(arg(1)) {
                Ok(v) => Ok(vec![
                    json!({ "breach": format!("env {}", arg(1)), "value": v }),
                ]),
                Err(e) => Err(Error::failed(format!("denied: env {}: {e}", arg(1)))),
            },
            "connect" => denied(
                &format!("connect {}", arg(1)),
                std::net::TcpStream::connect(arg(1)),
            ),
            "listen" => denied("listen", std::net::TcpListener::bind("127.0.0.1:0")),
            "lookup" => denied(
                &format!("lookup {}", arg(1)),
                std::net::ToSocketAddrs::to_socket_addrs(&(arg(1).as_str(), 80)),
            ),
            other => Err(Error::invalid_args(format!("unknown mode {other:?}"))),
        }
    }
}

lobster_guest::export_step!(Hostile);
