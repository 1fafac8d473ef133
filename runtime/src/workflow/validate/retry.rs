//! A step's `retry:` (attempts, backoff, delays, jitter).

use super::V;
use crate::value::Item;
use crate::workflow::model::Retry;

const RETRY_KEYS: &[&str] = &["max", "backoff", "delay_ms", "max_delay_ms", "jitter"];

pub(super) fn parse_retry(v: &mut V, ptr: &str, raw: Option<&Item>, id: &str) -> Retry {
    let mut r = Retry::default();
    let o = match raw {
        None | Some(Item::Null) => return r,
        Some(Item::Object(o)) => o,
        Some(_) => {
            v.val(ptr, format!("Workflow step {id} retry must be an object"));
            return r;
        }
    };
    v.keys(ptr, o, RETRY_KEYS, &format!("step {id} retry"));
    match o.get("max") {
        None => {}
        Some(Item::Number(n)) if n.as_u64().is_some_and(|x| (1..=1000).contains(&x)) => {
            r.max = n.as_u64().unwrap_or(1) as u32
        }
        Some(_) => v.val(
            &format!("{ptr}/max"),
            format!("Workflow step {id} retry.max must be a positive integer"),
        ),
    }
    match o.get("backoff") {
        None => {}
        Some(Item::String(s)) if s == "fixed" => {}
        Some(Item::String(s)) if s == "exponential" => r.exponential = true,
        Some(_) => v.val(
            &format!("{ptr}/backoff"),
            format!("Workflow step {id} retry.backoff must be \"fixed\" or \"exponential\""),
        ),
    }
    for (k, slot) in [
        ("delay_ms", &mut r.delay_ms),
        ("max_delay_ms", &mut r.max_delay_ms),
    ] {
        match o.get(k) {
            None => {}
            Some(Item::Number(n)) if n.as_f64().is_some_and(|x| x >= 0.0) => {
                *slot = n.as_f64().unwrap_or(0.0) as u64
            }
            Some(_) => v.val(
                &format!("{ptr}/{k}"),
                format!("Workflow step {id} retry.{k} must be a finite non-negative number"),
            ),
        }
    }
    match o.get("jitter") {
        None => {}
        Some(Item::Bool(b)) => r.jitter = *b,
        Some(_) => v.val(
            &format!("{ptr}/jitter"),
            format!("Workflow step {id} retry.jitter must be a boolean"),
        ),
    }
    r
}
