//! The hash chain: each record's hash is blake3 over the previous record's
//! hash and the record's canonical JSON (RFC 8785), so an edited, dropped,
//! reordered or moved event breaks every hash after it.
//!
//! ```text
//! hash(n) = blake3( hex(hash(n-1)) "\n" canonical({"event": E, "run": RUN, "seq": n}) )
//! hash(-1) = 64 zeros
//! ```
//! The run id is inside every hashed record, so a journal copied under
//! another run's name does not verify as that run's.

use super::canon;

/// The `prev` of a run's first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of the record `(run, seq, event)` after `prev`, where `event`
/// is the event's canonical JSON.
pub fn record_hash(prev: &str, run: &str, seq: u64, event_canonical: &str) -> String {
    let run = canon::to_canonical_of(run).unwrap_or_default();
    record_hash_quoted(prev, &run, seq, event_canonical)
}

/// [`record_hash`] with the run id given as its canonical JSON string
/// (a run's journal quotes it once for all its records).
pub fn record_hash_quoted(
    prev: &str,
    run_canonical: &str,
    seq: u64,
    event_canonical: &str,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(prev.as_bytes());
    h.update(b"\n{\"event\":");
    h.update(event_canonical.as_bytes());
    h.update(b",\"run\":");
    h.update(run_canonical.as_bytes());
    h.update(b",\"seq\":");
    h.update(seq.to_string().as_bytes());
    h.update(b"}");
    h.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_over_the_canonical_record() {
        let event = r#"{"kind":"step","ok":true}"#;
        let whole =
            serde_json::json!({"seq": 3, "run": "r", "event": {"ok": true, "kind": "step"}});
        let mut bytes = GENESIS.as_bytes().to_vec();
        bytes.push(b'\n');
        bytes.extend(canon::to_canonical(&whole).as_bytes());
        assert_eq!(
            record_hash(GENESIS, "r", 3, event),
            blake3::hash(&bytes).to_hex().to_string()
        );
        assert_ne!(
            record_hash(GENESIS, "r", 3, event),
            record_hash(GENESIS, "s", 3, event)
        );
        assert_ne!(
            record_hash(GENESIS, "r", 3, event),
            record_hash(GENESIS, "r", 4, event)
        );
    }
}
