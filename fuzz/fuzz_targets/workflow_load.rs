//! A workflow file (YAML, or JSON when the first byte says so) must load and
//! validate or fail with an error, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lobster::workflow::load::{parse_text, Source};
use lobster::workflow::validate::validate;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let is_json = first & 1 == 1;
    let Ok(doc) = parse_text(text, is_json, "fuzz.lobster") else {
        return;
    };
    let source = Source {
        shown: "fuzz.lobster".into(),
        path: "/nonexistent/fuzz.lobster".into(),
        digest: String::new(),
    };
    let _ = validate(source, &doc, None);
});
