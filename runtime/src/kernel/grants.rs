//! Capabilities a run grants to its wasm steps: preopened directories
//! (read-only or read-write), an environment allow-list, and the fixed wall
//! clock and random seed that make a run replayable. Nothing else: no
//! network, no inherited environment, no other files.
//!
//! The CLI fills [`Grants`] from flags:
//! - `--allow-read DIR[:/GUEST]`: `DIR` (relative to the working directory,
//!   inside it) appears read-only at `/GUEST` (default: `/` + the last
//!   component of `DIR`, so `--allow-read examples/mail` gives `/mail`).
//! - `--allow-write DIR[:/GUEST]`: the same, read-write.
//! - `--allow-env NAME`: the step sees `NAME` with its value from the run's
//!   environment.
//!
//! The run's clock and seed (`Grants::wall_clock_ms`, `Grants::random_seed`)
//! are chosen by the caller and recorded in the resume state so a replay sees
//! the same values.

use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// A grant that cannot be given (a malformed spec, a directory outside the
/// working directory); the sandbox reports it as its `Grant` error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GrantError(pub String);

/// How a directory is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read files and list directories.
    Read,
    /// Also create, write, rename and delete.
    ReadWrite,
}

/// One preopened directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirGrant {
    /// Host directory, relative to the run's working directory.
    pub host: PathBuf,
    /// Absolute guest path, e.g. `/mail`.
    pub guest: String,
    /// Read-only or read-write.
    pub access: Access,
}

/// What wasm steps of a run may touch. The default grants nothing, and
/// fixes the clock at the Unix epoch with random seed 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    /// Preopened directories.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the steps may read (values come from the run's env).
    pub env: Vec<String>,
    /// The wall clock every step sees, in milliseconds since the Unix epoch.
    pub wall_clock_ms: u64,
    /// Seed of the steps' random numbers (secure and insecure). Stored as
    /// a decimal string: state files are written as JavaScript JSON, where a
    /// number above 2^53 loses its low bits and a resumed run would replay
    /// different random bytes.
    #[serde(with = "seed_text")]
    pub random_seed: u64,
    /// Gateway tools steps may call through the host broker (`--allow-tool NAME`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Whether steps may call a model through the host broker (`--allow-llm`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llm: bool,
}

/// `random_seed` as exact decimal text (a number is still read, for states
/// written before).
mod seed_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(seed: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&seed.to_string())
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seed {
        Text(String),
        Number(u64),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match Seed::deserialize(d)? {
            Seed::Number(n) => Ok(n),
            Seed::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A directory grant checked against the working directory, opened
/// beneath it.
#[derive(Debug, Clone)]
pub struct ResolvedDir {
    /// Canonical host path, inside the working directory.
    pub host: PathBuf,
    /// Guest path.
    pub guest: String,
    /// Access.
    pub access: Access,
    /// The directory as opened beneath the working directory (`None` only
    /// for a grant built by hand): preopen this, not `host`, so a link
    /// swapped in after the check is not followed.
    pub handle: Option<std::sync::Arc<super::root::OpenDir>>,
}

impl ResolvedDir {
    /// The path to preopen: the open handle's, else the host path.
    pub fn open_path(&self) -> PathBuf {
        self.handle
            .as_ref()
            .map(|h| h.handle_path())
            .unwrap_or_else(|| self.host.clone())
    }
}

impl PartialEq for ResolvedDir {
    fn eq(&self, other: &Self) -> bool {
        self.host == other.host && self.guest == other.guest && self.access == other.access
    }
}

impl Eq for ResolvedDir {}

impl Grants {
    /// Nothing granted (same as `Grants::default()`).
    pub fn none() -> Self {
        Grants::default()
    }

    /// Start building grants.
    pub fn builder() -> GrantsBuilder {
        GrantsBuilder::default()
    }

    /// The directory granted at `guest`, if any.
    pub fn dir(&self, guest: &str) -> Option<&DirGrant> {
        self.dirs.iter().find(|d| d.guest == guest)
    }

    /// Whether `name` is on the environment allow-list.
    pub fn allows_env(&self, name: &str) -> bool {
        self.env.iter().any(|e| e == name)
    }

    /// The same grants with a new run's clock (now) and random seed.
    pub fn fresh_run(&self) -> Grants {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        Grants {
            wall_clock_ms: now,
            random_seed: u64::from_le_bytes(seed),
            ..self.clone()
        }
    }

    /// Check every directory grant against `cwd`: relative, no `..`, an
    /// existing directory, and (after following symlinks) inside `cwd`.
    pub fn resolve_dirs(&self, cwd: &Path) -> Result<Vec<ResolvedDir>, GrantError> {
        // Nothing granted, nothing to check (a step's preflight and its
        // start each ask: `realpath` of the working directory was a
        // readlink per path component, per step, per run).
        if self.dirs.is_empty() {
            return Ok(Vec::new());
        }
        let root = cwd.canonicalize().map_err(|e| {
            GrantError(format!(
                "cannot resolve the working directory {}: {e}",
                cwd.display()
            ))
        })?;
        let mut out: Vec<ResolvedDir> = Vec::with_capacity(self.dirs.len());
        for grant in &self.dirs {
            let opened = resolve_inside(&root, &grant.host)?;
            if out.iter().any(|d| d.guest == grant.guest) {
                return Err(GrantError(format!(
                    "two directories are granted at {}",
                    grant.guest
                )));
            }
            out.push(ResolvedDir {
                host: opened.path.clone(),
                guest: grant.guest.clone(),
                access: grant.access,
                handle: Some(std::sync::Arc::new(opened)),
            });
        }
        Ok(out)
    }
}

fn resolve_inside(root: &Path, path: &Path) -> Result<super::root::OpenDir, GrantError> {
    use super::root::Refused;
    let shown = path.display();
    if path.is_absolute() {
        return Err(GrantError(format!(
            "cannot grant {shown}: give a directory relative to the working directory"
        )));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(GrantError(format!(
            "cannot grant {shown}: `..` is not allowed in granted directories"
        )));
    }
    super::root::open_dir(root, path).map_err(|why| {
        GrantError(match why {
            Refused::Outside => {
                format!("cannot grant {shown}: it leads outside the working directory")
            }
            Refused::Missing => format!("cannot grant {shown}: no such directory"),
            Refused::WrongKind => format!("cannot grant {shown}: not a directory"),
            Refused::Unreadable(e) => format!("cannot grant {shown}: {e}"),
        })
    })
}

/// Builds [`Grants`] from CLI-style specs; errors surface in [`GrantsBuilder::build`].
#[derive(Debug, Default)]
pub struct GrantsBuilder {
    grants: Grants,
    errors: Vec<String>,
}

impl GrantsBuilder {
    /// `--allow-read DIR[:/GUEST]`.
    pub fn allow_read(self, spec: &str) -> Self {
        self.allow_dir(spec, Access::Read)
    }

    /// `--allow-write DIR[:/GUEST]` (read-write).
    pub fn allow_write(self, spec: &str) -> Self {
        self.allow_dir(spec, Access::ReadWrite)
    }

    /// A directory grant from `DIR[:/GUEST]` with `access`.
    pub fn allow_dir(mut self, spec: &str, access: Access) -> Self {
        match parse_dir_spec(spec, access) {
            Ok(grant) => match self.grants.dirs.iter_mut().find(|d| d.guest == grant.guest) {
                // The same directory granted twice keeps the wider access.
                Some(d) if d.host == grant.host => d.access = d.access.max(grant.access),
                Some(_) => self
                    .errors
                    .push(format!("two directories are granted at {}", grant.guest)),
                None => self.grants.dirs.push(grant),
            },
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// `--allow-env NAME`.
    pub fn allow_env(mut self, name: &str) -> Self {
        let valid = !name.is_empty() && !name.contains('=') && !name.contains('\0');
        if !valid {
            self.errors
                .push(format!("--allow-env needs a variable name, got {name:?}"));
        } else if !self.grants.allows_env(name) {
            self.grants.env.push(name.to_string());
        }
        self
    }

    /// The wall clock steps see (milliseconds since the Unix epoch).
    pub fn wall_clock_ms(mut self, ms: u64) -> Self {
        self.grants.wall_clock_ms = ms;
        self
    }

    /// The random seed of the run.
    pub fn random_seed(mut self, seed: u64) -> Self {
        self.grants.random_seed = seed;
        self
    }

    /// Clock = now and a fresh random seed (record both to replay the run).
    pub fn fresh_run(mut self) -> Self {
        self.grants = self.grants.fresh_run();
        self
    }

    /// `--allow-tool NAME`: steps may call gateway tool `NAME` through the broker.
    pub fn allow_tool(mut self, name: &str) -> Self {
        let valid = !name.trim().is_empty() && !name.chars().any(char::is_control);
        if !valid {
            self.errors
                .push(format!("--allow-tool needs a tool name, got {name:?}"));
        } else if !self.grants.tools.iter().any(|t| t == name) {
            self.grants.tools.push(name.to_string());
        }
        self
    }

    /// `--allow-llm`: steps may call a model through the broker.
    pub fn allow_llm(mut self, allow: bool) -> Self {
        self.grants.llm |= allow;
        self
    }

    /// The grants, or the first malformed spec.
    pub fn build(self) -> Result<Grants, GrantError> {
        match self.errors.into_iter().next() {
            Some(e) => Err(GrantError(e)),
            None => Ok(self.grants),
        }
    }
}

fn parse_dir_spec(spec: &str, access: Access) -> Result<DirGrant, String> {
    let flag = match access {
        Access::Read => "--allow-read",
        Access::ReadWrite => "--allow-write",
    };
    let (host, guest) = match spec.rsplit_once(":/") {
        Some((h, g)) => (h, Some(format!("/{g}"))),
        None => (spec, None),
    };
    if host.is_empty() {
        return Err(format!("{flag} needs a directory"));
    }
    let host = PathBuf::from(host);
    let guest = match guest {
        Some(g) => g,
        None => match host.file_name().and_then(|n| n.to_str()) {
            Some(name) => format!("/{name}"),
            None => {
                return Err(format!(
                    "{flag} {spec}: say where the step sees it, e.g. {flag} {spec}:/data"
                ))
            }
        },
    };
    let guest = guest.trim_end_matches('/').to_string();
    let ok = guest.len() > 1
        && !guest.contains('\0')
        && guest
            .split('/')
            .skip(1)
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if !ok {
        return Err(format!(
            "{flag} {spec}: the guest path must be absolute without `.` or `..` (e.g. /data)"
        ));
    }
    Ok(DirGrant {
        host,
        guest,
        access,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_grants_nothing() {
        let g = Grants::default();
        assert!(g.dirs.is_empty() && g.env.is_empty());
        assert_eq!(g, Grants::none());
    }

    #[test]
    fn specs_parse_with_default_and_explicit_guest_paths() {
        let g = Grants::builder()
            .allow_read("examples/mail")
            .allow_write("out:/data/out")
            .allow_env("HOME")
            .allow_env("HOME")
            .build()
            .unwrap();
        assert_eq!(g.dirs[0].guest, "/mail");
        assert_eq!(g.dirs[0].access, Access::Read);
        assert_eq!(g.dirs[1].guest, "/data/out");
        assert_eq!(g.dirs[1].host, PathBuf::from("out"));
        assert_eq!(g.env, ["HOME"]);
        assert!(Grants::builder().allow_read(".").build().is_err());
        assert!(Grants::builder().allow_read("x:/..").build().is_err());
        assert!(Grants::builder().allow_env("A=B").build().is_err());
        let g = Grants::builder()
            .allow_read("m")
            .allow_write("m")
            .build()
            .unwrap();
        assert_eq!(g.dirs.len(), 1);
        assert_eq!(g.dirs[0].access, Access::ReadWrite);
    }

    #[test]
    fn grants_round_trip_through_json_for_resume_state() {
        let g = Grants::builder()
            .allow_read("mail")
            .allow_env("TOKEN")
            .wall_clock_ms(1_700_000_000_000)
            .random_seed(42)
            .build()
            .unwrap();
        let text = serde_json::to_string(&g).unwrap();
        assert_eq!(
            text,
            r#"{"dirs":[{"host":"mail","guest":"/mail","access":"read"}],"env":["TOKEN"],"wall_clock_ms":1700000000000,"random_seed":"42"}"#
        );
        assert_eq!(serde_json::from_str::<Grants>(&text).unwrap(), g);
        let fresh = Grants::builder().fresh_run().build().unwrap();
        assert!(fresh.wall_clock_ms > 1_700_000_000_000);
    }

    #[test]
    fn a_large_seed_survives_the_state_file_exactly() {
        let g = Grants::builder().random_seed(u64::MAX - 1).build().unwrap();
        // Resume states are written as JavaScript JSON (numbers are doubles).
        let text = crate::value::to_js_json(&serde_json::to_value(&g).unwrap());
        let back: Grants = serde_json::from_str(&text).unwrap();
        assert_eq!(back.random_seed, u64::MAX - 1, "{text}");
        // States written with a numeric seed still load.
        let old = r#"{"dirs":[],"env":[],"wall_clock_ms":1,"random_seed":42}"#;
        assert_eq!(serde_json::from_str::<Grants>(old).unwrap().random_seed, 42);
    }

    #[test]
    fn dirs_must_stay_inside_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("cwd");
        std::fs::create_dir_all(cwd.join("inside")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), cwd.join("link")).unwrap();
        let check = |spec: &str| {
            Grants::builder()
                .allow_read(spec)
                .build()
                .unwrap()
                .resolve_dirs(&cwd)
        };
        assert!(check("inside").is_ok());
        let msg = |spec: &str| check(spec).unwrap_err().to_string();
        assert!(
            msg("../outside:/o").contains("`..`"),
            "{}",
            msg("../outside:/o")
        );
        assert!(msg("link:/o").contains("outside the working directory"));
        let abs = format!("{}:/o", tmp.path().join("outside").display());
        assert!(msg(&abs).contains("relative"));
        assert!(msg("missing").contains("cannot grant missing"));
    }
}
