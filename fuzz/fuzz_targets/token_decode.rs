//! Resume-token decoding against a real state directory (with its MAC key)
//! must verify or refuse any text, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lobster::resume::token::{decode, issue, TokenKind};
use lobster::state::StateStore;
use std::sync::OnceLock;

fn store() -> &'static StateStore {
    static S: OnceLock<StateStore> = OnceLock::new();
    S.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("lobster-fuzz-token-{}", std::process::id()));
        let store = StateStore::new(dir);
        issue(&store, TokenKind::Pipeline, "pipeline_resume_seed").expect("key is created");
        store
    })
}

fuzz_target!(|text: &str| {
    let _ = decode(store(), text);
});
