//! Build facts for `lobster version --verbose` and `lobster doctor`: the git
//! commit the binary was built from (`unknown` outside a git checkout) and
//! the wasmtime version from Cargo.lock. Re-run only when HEAD or the lock
//! file moves, so ordinary edits do not re-run it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let lock = manifest.join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let wasmtime = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| locked_version(&text, "wasmtime"))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LOBSTER_WASMTIME_VERSION={wasmtime}");

    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LOBSTER_COMMIT={commit}");
    // HEAD names a branch whose ref file (or packed-refs) moves with each
    // commit. Only paths that exist are watched: cargo re-runs a build script
    // on every build while a path it watches is missing, which recompiled
    // lobster on every cargo command in a checkout without packed-refs (a
    // fresh clone has none). Packing the refs removes the loose ref file,
    // which re-runs this script, which then watches packed-refs.
    let watch = |path: PathBuf| {
        let exists = path.exists();
        if exists {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        exists
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = manifest.join(dir);
        watch(dir.join("HEAD"));
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            let common = manifest.join(common);
            let packed = watch(common.join("packed-refs"));
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                // An unborn branch has neither: its first commit adds a file
                // under refs/heads.
                if !watch(common.join(Path::new(&branch))) && !packed {
                    watch(common.join("refs").join("heads"));
                }
            }
        }
    }
}

/// The version of package `name` in a Cargo.lock.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let want = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == want {
            let version = lines.next()?.trim();
            return version
                .strip_prefix("version = \"")
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_string);
        }
    }
    None
}
