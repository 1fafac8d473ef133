//! `probe`: exercises host functions and reports what the sandbox looks like.
//! Modes (first positional): `echo` (default), `state`, `log`, `world`,
//! `env NAME`, `write PATH TEXT`, `read PATH`, `args`, `put KEY TEXT`, `get KEY`,
//! `taint SECRET` (leaves SECRET reversed in a static, in 2 MiB of heap and
//! in a static counter), `smudge SECRET` (says whether an initialised static
//! — part of the module's data segment, so of the memory image — still holds
//! its initial bytes, then writes SECRET reversed over them) and `scan SECRET`
//! (searches the whole linear memory for SECRET reversed, without ever
//! writing it: a hit is what an earlier instance left behind).
use lobster_guest::{json, log, state, Access, Args, Error, Flag, Step, StepInfo, Value};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

struct Probe;

static COUNTER: AtomicU64 = AtomicU64::new(0);
static TAINT: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// Initialised data (two pages of a non-zero pattern), so it sits in the
/// module's data segment rather than in zeroed memory.
static IMAGE: Mutex<[u8; 2 * 65536]> = Mutex::new([0xA5; 2 * 65536]);

/// Whether any address of linear memory 0 starts `needle` reversed. The
/// reversed needle is compared byte by byte, never built, so it is not in
/// memory unless something put it there.
fn memory_holds_reversed(needle: &[u8]) -> bool {
    if needle.is_empty() {
        return false;
    }
    #[cfg(target_arch = "wasm32")]
    let size = core::arch::wasm32::memory_size(0) * 65536;
    #[cfg(not(target_arch = "wasm32"))]
    let size = 0usize;
    let n = needle.len();
    // Address 0 is the null pointer; nothing of interest lives below 8.
    (8..size.saturating_sub(n)).any(|at| {
        (0..n).all(|i| {
            // SAFETY: every address below memory.size is readable in wasm.
            let byte = unsafe { std::ptr::read_volatile((at + i) as *const u8) };
            byte == needle[n - 1 - i]
        })
    })
}

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
            "taint" => {
                let secret = pos.get(1).ok_or_else(|| Error::invalid_args("taint SECRET"))?;
                let reversed: Vec<u8> = secret.bytes().rev().collect();
                let mut heap = vec![0u8; 2 << 20];
                for chunk in heap.chunks_mut(reversed.len().max(1)) {
                    let n = chunk.len().min(reversed.len());
                    chunk[..n].copy_from_slice(&reversed[..n]);
                }
                std::mem::forget(std::hint::black_box(heap));
                TAINT.lock().unwrap().extend_from_slice(&reversed);
                let n = COUNTER.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(vec![json!({ "counter": n })])
            }
            "smudge" => {
                let secret = pos.get(1).ok_or_else(|| Error::invalid_args("smudge SECRET"))?;
                let mut image = IMAGE.lock().unwrap();
                let intact = image.iter().all(|b| *b == 0xA5);
                let reversed: Vec<u8> = secret.bytes().rev().collect();
                for chunk in image.chunks_mut(reversed.len().max(1)) {
                    let n = chunk.len().min(reversed.len());
                    chunk[..n].copy_from_slice(&reversed[..n]);
                }
                Ok(vec![json!({ "intact": intact })])
            }
            "scan" => {
                let secret = pos.get(1).ok_or_else(|| Error::invalid_args("scan SECRET"))?;
                Ok(vec![json!({
                    "found": memory_holds_reversed(secret.as_bytes()),
                    "counter": COUNTER.load(Ordering::SeqCst),
                    "taint_len": TAINT.lock().unwrap().len(),
                })])
            }
            other => Err(Error::invalid_args(format!("unknown mode {other}"))),
        }
    }
}

lobster_guest::export_step!(Probe);

#[allow(dead_code)]
fn _unused(_: Access) {}
