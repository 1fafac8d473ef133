//! The last text a WebAssembly guest returned on this thread, kept with its
//! digest so the same bytes met again in the run are not hashed again
//! (digest rule 2, see [`super::DigestRule`]).
//!
//! A step's items are often handed on unchanged: the next guest is handed
//! them as the text the step before returned (a workflow's `stdin:
//! $prev.json`), the workflow step's `stdout` prints them as that text, and
//! so does the run's output when the step was the last. Each of those is
//! compared whole with the kept text — a `memcmp`, far cheaper than blake3 —
//! and takes the kept digest when the bytes are equal. The digest is of the
//! bytes, so who kept it and which run it came from does not matter.

use std::cell::RefCell;

/// Texts longer than this are not kept.
const KEPT_MAX: usize = 64 << 10;

#[derive(Default)]
struct Kept {
    text: String,
    digest: Option<String>,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::default();
}

/// Keep `text` with its `digest` on this thread (a text over 64 KiB
/// clears what was kept instead).
pub fn keep(text: String, digest: &str) {
    KEPT.with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            *k = match text.len() <= KEPT_MAX {
                true => Kept {
                    text,
                    digest: Some(digest.to_string()),
                },
                false => Kept::default(),
            };
        }
    });
}

/// The kept digest of `text`, if `text` is the kept text byte for byte.
pub fn recall(text: &[u8]) -> Option<String> {
    KEPT.with(|k| {
        let k = k.try_borrow().ok()?;
        (k.text.as_bytes() == text)
            .then(|| k.digest.clone())
            .flatten()
    })
}

/// blake3 hex of `text`: the kept digest when `text` is the kept text,
/// else hashed ([`super::digest`]). Nothing is kept by this.
pub fn digest(text: &[u8]) -> String {
    recall(text).unwrap_or_else(|| super::digest(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept digest is handed out only for the same bytes; anything else
    /// is hashed; a long text is not kept; another thread keeps its own.
    #[test]
    fn only_the_same_bytes_take_the_kept_digest() {
        let text = r#"[{"a":1},"é"]"#;
        let real = super::super::digest(text.as_bytes());
        // A wrong digest kept on purpose shows which path answered.
        keep(text.to_string(), "kept");
        assert_eq!(digest(text.as_bytes()), "kept");
        assert_eq!(recall(text.as_bytes()).as_deref(), Some("kept"));
        let other = r#"[{"a":1},"e"]"#;
        assert_eq!(
            digest(other.as_bytes()),
            super::super::digest(other.as_bytes())
        );
        assert_eq!(
            digest(&text.as_bytes()[1..]),
            super::super::digest(&text.as_bytes()[1..])
        );
        assert_eq!(recall(b""), None);
        std::thread::spawn(move || assert_eq!(digest(text.as_bytes()), real))
            .join()
            .unwrap();
        let long = "x".repeat(KEPT_MAX + 1);
        keep(long.clone(), "kept");
        assert_eq!(recall(long.as_bytes()), None);
        assert_eq!(recall(text.as_bytes()), None, "the long text cleared it");
    }
}
