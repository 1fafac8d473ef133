//! `lobster bundle build DIR [--out PATH]` and `lobster bundle verify PATH`.

use super::output::{human_error, write_once};
use super::trust_args;
use crate::error::Error;
use crate::sandbox::bundle;
use crate::sandbox::ArtifactCache;
use crate::state::StateStore;
use std::path::Path;

/// `lobster help bundle`.
pub const BUNDLE_HELP: &str = "lobster bundle — package a step with a reviewed manifest

Usage:
  lobster bundle build DIR [--out PATH]
  lobster bundle verify PATH

build: DIR holds exactly one .wasm component and optionally bundle.toml
(source = \"URL\", license = \"SPDX\"). Writes the bundle directory PATH
(default ./NAME-VERSION.bundle) with step.wasm and manifest.toml: name,
version, summary, flags and capabilities from describe, the WIT world, the
blake3 digest, source and licence.
verify: checks the digest, the imports and that describe still says what
the manifest says. Exit 0 when the bundle is good, 1 otherwise.
";

fn fail(e: &Error) -> i32 {
    write_once("", &human_error(e, None));
    e.exit_code()
}

/// Run `lobster bundle …`; returns the exit code.
pub fn bundle(argv: &[String]) -> i32 {
    let args = match trust_args::parse("bundle", argv, &["--out"]) {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    if args.help || args.words.is_empty() {
        write_once(BUNDLE_HELP, "");
        return if args.help { 0 } else { 2 };
    }
    let cache = ArtifactCache::in_state_dir(StateStore::from_env().dir());
    match (args.words[0].as_str(), &args.words[1..]) {
        ("build", [dir]) => {
            match bundle::build(Path::new(dir), args.out.as_deref().map(Path::new), &cache) {
                Ok(out) => {
                    write_once(&format!("{}\n", out.display()), "");
                    0
                }
                Err(e) => fail(&e),
            }
        }
        ("verify", [path]) => {
            let findings = bundle::verify(Path::new(path), &cache);
            if findings.is_empty() {
                write_once(&format!("{path}: ok\n"), "");
                0
            } else {
                let text: String = findings.iter().map(|f| format!("{f}\n")).collect();
                write_once(&text, "");
                1
            }
        }
        _ => fail(&Error::parse(
            "usage: lobster bundle build DIR [--out PATH] | lobster bundle verify PATH",
        )),
    }
}
