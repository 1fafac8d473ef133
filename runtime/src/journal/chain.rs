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
    with_record_buffer(|buf| {
        open_record(buf, prev);
        buf.push_str(event_canonical);
        Hex::of(&close_record(buf, run_canonical, seq))
            .as_str()
            .to_owned()
    })
}

/// A hash's lowercase hex, on the stack: the text `blake3::Hash::to_hex`
/// gives, written two digits per table lookup instead of a checked push
/// per character (a journal writes one per record and per digest).
pub struct Hex([u8; 64]);

impl Hex {
    /// The hex of `hash`.
    pub fn of(hash: &blake3::Hash) -> Hex {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (pair, &b) in out.chunks_exact_mut(2).zip(hash.as_bytes()) {
            pair[0] = DIGITS[(b >> 4) as usize];
            pair[1] = DIGITS[(b & 15) as usize];
        }
        Hex(out)
    }

    /// The hex text.
    pub fn as_str(&self) -> &str {
        // (Only ASCII digits and letters were written.)
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Start the hashed bytes of a record after `prev` in `buf` (cleared
/// first): the record's event text is to be appended next, then
/// [`close_record`] called.
pub fn open_record(buf: &mut String, prev: &str) {
    buf.clear();
    buf.push_str(prev);
    buf.push_str("\n{\"event\":");
}

/// Finish the record [`open_record`] began in `buf` (its event text
/// written) as the record `seq` of the run whose id's canonical JSON is
/// `run_canonical`, and hash it: one pass over contiguous bytes.
pub fn close_record(buf: &mut String, run_canonical: &str, seq: u64) -> blake3::Hash {
    buf.push_str(",\"run\":");
    buf.push_str(run_canonical);
    buf.push_str(",\"seq\":");
    buf.push_str(itoa::Buffer::new().format(seq));
    buf.push('}');
    blake3::hash(buf.as_bytes())
}

/// Run `f` with a buffer this thread keeps for records' hashed bytes (a
/// fresh one if it is in use; one past 64 KiB is not kept).
pub fn with_record_buffer<R>(f: impl FnOnce(&mut String) -> R) -> R {
    thread_local! {
        static BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => {
            let r = f(&mut buf);
            if buf.capacity() > 64 << 10 {
                *buf = String::new();
            }
            r
        }
        Err(_) => f(&mut String::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hex is `blake3::Hash::to_hex`'s, byte for byte.
    #[test]
    fn hex_is_blake3s_own() {
        for input in [&b""[..], b"a", b"\xff\x00 journal", &[0xab; 1000]] {
            let h = blake3::hash(input);
            assert_eq!(Hex::of(&h).as_str(), h.to_hex().as_str());
        }
        let h = blake3::Hash::from_bytes(std::array::from_fn(|i| (i * 8) as u8));
        assert_eq!(Hex::of(&h).as_str(), h.to_hex().as_str());
    }

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
