//! The pipeline parser must return a pipeline or a parse error for any text,
//! never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = lobster::dsl::parse(text);
});
