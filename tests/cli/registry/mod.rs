//! Steps through a real OCI registry on loopback (Debian's docker-registry,
//! started by tests/registry.sh, plain and with TLS + htpasswd basic auth):
//! publish and pull, `oci://` stage names and `uses:`, lock pins, the local
//! cache, the operator's credentials and where they go, the policy's
//! registry list, and tampering (a blob swapped in the registry, a tag
//! moved after locking, the local cache altered), each refused before
//! anything is compiled, with the step named.
//!
//! The registry of a test's own and the helpers are here; the tests by
//! concept in the submodules.

use crate::common::{guest, root, write, Env, Run};
use std::io::Write as _;
use std::path::{Path, PathBuf};

mod credentials;
mod publish_pull;
mod signatures;

/// A registry of this test's own (a directory, a port), stopped on drop.
pub struct OwnRegistry {
    dir: PathBuf,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// TLS: the CA file and the password of user `lobster`.
    pub tls: Option<(PathBuf, String)>,
}

impl OwnRegistry {
    /// Start one (`tls`: https with basic auth). `None` (skipped loudly)
    /// when docker-registry is missing and cannot be installed; under CI a
    /// missing registry fails instead.
    pub fn start(tls: bool) -> Option<OwnRegistry> {
        let dir = std::env::temp_dir().join(format!(
            "lobster-registry-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        let out = std::process::Command::new("bash")
            .arg(root().join("tests/registry.sh"))
            .arg(if tls { "start-tls" } else { "start" })
            .arg(&dir)
            .output()
            .unwrap();
        if !out.status.success() {
            let msg = format!(
                "tests/registry.sh could not start a registry: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if std::env::var_os("CI").is_some() {
                panic!("{msg}");
            }
            eprintln!("SKIPPED: {msg}");
            return None;
        }
        let addr = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let tls = tls.then(|| {
            let password = std::fs::read_to_string(dir.join("password")).unwrap();
            (dir.join("ca.pem"), password.trim().to_string())
        });
        Some(OwnRegistry { dir, addr, tls })
    }

    /// The blob file of `digest` (`sha256:…`) in the registry's storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// `oci://ADDR/REPO`.
    pub fn oci(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for OwnRegistry {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(root().join("tests/registry.sh"))
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

/// A policy in the work dir: the plain registry reached over http.
pub fn insecure_policy(env: &Env, reg: &OwnRegistry, extra: &str) -> String {
    write(
        env,
        "policy.toml",
        &format!("insecure_registries = [\"{}\"]\n{extra}", reg.addr),
    );
    "policy.toml".into()
}

/// `lobster step publish FILE TARGET --policy POLICY`.
fn publish(env: &Env, file: &Path, target: &str, policy: &str) -> Run {
    let file = file.to_str().unwrap();
    env.run(&["step", "publish", file, target, "--policy", policy])
}

/// The reference with digest that `lobster step publish` printed.
pub fn published_ref(r: &Run) -> String {
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
        .split_whitespace()
        .find(|w| w.starts_with("oci://") && w.contains("@sha256:"))
        .unwrap_or_else(|| panic!("no reference in {r:?}"))
        .to_string()
}

fn greet() -> Option<PathBuf> {
    guest("examples/steps", "greet")
}

fn other_component() -> Option<PathBuf> {
    guest("examples/steps", "inbox_list")
}

/// Nothing was compiled in this state directory.
fn nothing_compiled(env: &Env) -> bool {
    let dir = env.state.path().join("cache/wasm");
    std::fs::read_dir(&dir).map_or(true, |d| {
        d.flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".cwasm"))
    })
}

fn wf(env: &Env, uses: &str) -> PathBuf {
    write(
        env,
        "wf.lobster",
        &format!("name: hi\nsteps:\n  - id: hello\n    uses: {uses}\n    with:\n      name: Ada\n    stdin: [1]\n"),
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    // The registry's layer digest, computed the long way: the test must
    // not trust lobster's own hashing.
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}
