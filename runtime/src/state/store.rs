//! The store handle: files (default) or PostgreSQL, one tenant each.

use super::atomic::{create_new_atomic, sync_dir, write_atomic};
use super::keys::{is_run_key, is_tenant_name, key_to_file_name, tenant_id};
use super::pg;
use crate::error::{Error, Result};
use crate::value::{to_js_json_pretty, Item};
use std::fs::{self, DirBuilder};
use std::io::ErrorKind;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The tenant of CLI use, and the one [`StateStore::from_env`] opens.
pub const DEFAULT_TENANT: &str = "default";

/// The top-level field of a paused run's state that says every step after
/// its gate is pure or acts only through journaled brokered calls
/// ([`crate::policy::recovery`]): when the resume that
/// claimed it dies, the run may be claimed again — the PostgreSQL row's
/// `rerun`, the files store's interrupted record carrying the state.
pub const RERUN_SAFE: &str = "rerunSafe";

/// Whether a paused run's `state` says [`RERUN_SAFE`].
pub fn is_rerun_safe(state: &Item) -> bool {
    state.get(RERUN_SAFE) == Some(&Item::Bool(true))
}

/// How long a PostgreSQL claim holds without a heartbeat (heartbeats come
/// every third of it while the resumed run executes).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// Durable state of one tenant: key/value JSON (`state.get`/`state.set`/
/// `diff.last`), paused runs and their claims, approval ids, the token key.
///
/// The files back end (the default) keeps one JSON file per key in a
/// directory; the PostgreSQL back end keeps rows in `lobster_kv` and
/// `lobster_runs`. Either way [`StateStore::dir`] is a local directory: node-
/// local caches (compiled components) live there, never in the database.
#[derive(Debug, Clone)]
pub struct StateStore {
    dir: PathBuf,
    root: PathBuf,
    backend: Backend,
}

#[derive(Debug, Clone)]
enum Backend {
    Files,
    Postgres(pg::Tenant),
    /// `LOBSTER_STORE`/`--store` named something that is no store: every
    /// call fails with this message (nothing silently falls back to files).
    Unusable(String),
}

impl StateStore {
    /// A files store rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        StateStore {
            root: dir.clone(),
            dir,
            backend: Backend::Files,
        }
    }

    /// A PostgreSQL store at `url` (tenant [`DEFAULT_TENANT`]), with `dir` as
    /// the local directory for node-local caches. Nothing connects until the
    /// first call; the schema is migrated on the first connection.
    pub fn postgres(url: &str, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        StateStore {
            root: dir.clone(),
            dir,
            backend: Backend::Postgres(pg::Tenant {
                db: pg::open(url),
                tenant: DEFAULT_TENANT.to_string(),
                lease: DEFAULT_LEASE,
            }),
        }
    }

    /// The store `url` names: `postgres://…`/`postgresql://…`, or a files
    /// store (an empty URL or `files`: in `dir`; `file://DIR` or a plain
    /// path: in that directory). Any other `scheme://` is refused.
    pub fn open(url: &str, dir: impl Into<PathBuf>) -> Self {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return StateStore::postgres(url, dir);
        }
        if url.is_empty() || url == "files" {
            return StateStore::new(dir);
        }
        if let Some(path) = url.strip_prefix("file://") {
            return StateStore::new(path);
        }
        if !url.contains("://") {
            return StateStore::new(url);
        }
        let mut store = StateStore::new(dir);
        store.backend = Backend::Unusable(format!(
            "unknown store {:?}: expected postgres://… (or postgresql://…), file://DIR, a directory, or files",
            pg::redact(url)
        ));
        store
    }

    /// `LOBSTER_STORE` when set (see [`StateStore::open`]), else files in
    /// `LOBSTER_STATE_DIR` (trimmed, if non-empty), else `~/.lobster/state`.
    /// The directory is the local one in every case.
    pub fn from_env() -> Self {
        let configured = std::env::var("LOBSTER_STATE_DIR")
            .ok()
            .map(|s| s.trim().to_string());
        let dir = match configured.filter(|s| !s.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => {
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("."));
                home.join(".lobster").join("state")
            }
        };
        let store = match std::env::var("LOBSTER_STORE") {
            Ok(url) if !url.trim().is_empty() => StateStore::open(&url, dir),
            _ => StateStore::new(dir),
        };
        store.with_env_lease()
    }

    /// This store with the lease `LOBSTER_STORE_LEASE_MS` sets, if set (a
    /// value out of [`LEASE_RANGE_MS`] makes the store unusable, saying so).
    pub fn with_env_lease(self) -> StateStore {
        match std::env::var("LOBSTER_STORE_LEASE_MS") {
            Ok(ms) if !ms.trim().is_empty() => match parse_lease(&ms) {
                Ok(lease) => self.with_lease(lease),
                Err(msg) => StateStore {
                    backend: Backend::Unusable(msg),
                    ..self
                },
            },
            _ => self,
        }
    }

    /// How long a claim holds without a heartbeat ([`DEFAULT_LEASE`] for
    /// the files store, whose claims need none).
    pub fn lease(&self) -> Duration {
        match &self.backend {
            Backend::Postgres(t) => t.lease,
            _ => DEFAULT_LEASE,
        }
    }

    /// The same store seen as tenant `name`: files in `tenants/<name>/` under
    /// the root directory ([`DEFAULT_TENANT`] is the root itself, where CLI
    /// runs keep their state); PostgreSQL rows whose tenant column is `name`,
    /// over the same pool. Names outside `[a-z0-9][a-z0-9_-]{0,63}` are
    /// hex-encoded (`~` + hex), so distinct names never share state.
    pub fn for_tenant(&self, name: &str) -> StateStore {
        let name = tenant_id(name);
        let mut store = self.clone();
        // The local directory is per tenant on either back end (PostgreSQL:
        // for what stays on the node, such as serve's inline workflows).
        store.dir = if name == DEFAULT_TENANT {
            self.root.clone()
        } else {
            self.root.join("tenants").join(&name)
        };
        if let Backend::Postgres(t) = &mut store.backend {
            t.tenant = name;
        }
        store
    }

    /// The store of `lobster serve`'s tenant `name` under this store's root,
    /// the one rule for where a serve tenant's state lives (the gateway
    /// and `lobster runs|approvals|replay --tenant` both take it): files in
    /// `<root>/tenants/<name>/` — the tenant called `default` too, since
    /// the root itself is the command line's own runs — named `name` by
    /// [`StateStore::tenant`] (a run's journal records it); PostgreSQL
    /// rows whose tenant column is `name` ([`StateStore::for_tenant`]).
    /// `name` must pass [`is_tenant_name`] (serve's configuration and the
    /// command line check it first; here it is refused as a path).
    pub fn for_serve_tenant(&self, name: &str) -> Result<StateStore> {
        if !is_tenant_name(name) {
            return Err(Error::parse(format!(
                "tenant name {name:?} must match [a-z0-9_-]{{1,64}} (a lobster serve tenant's [[tenant]] name)"
            )));
        }
        if !self.is_files() {
            return Ok(self.for_tenant(name));
        }
        Ok(StateStore {
            dir: self.root.join("tenants").join(name),
            root: self.root.clone(),
            backend: Backend::Files,
        })
    }

    /// This store with claims leased for `lease` (PostgreSQL; the files
    /// store's claims need no lease).
    pub fn with_lease(mut self, lease: Duration) -> StateStore {
        if let Backend::Postgres(t) = &mut self.backend {
            t.lease = lease;
        }
        self
    }

    /// The tenant this store reads and writes.
    pub fn tenant(&self) -> String {
        match &self.backend {
            Backend::Postgres(t) => t.tenant.clone(),
            _ if self.dir == self.root => DEFAULT_TENANT.to_string(),
            _ => self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    /// What this store is, for messages: `files at DIR` or the database URL
    /// (password redacted) and tenant.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Files => format!("files at {}", self.dir.display()),
            Backend::Postgres(t) => format!("PostgreSQL at {} (tenant {})", t.db.shown(), t.tenant),
            Backend::Unusable(msg) => msg.clone(),
        }
    }

    /// The PostgreSQL view, when this is a PostgreSQL store.
    pub fn pg(&self) -> Result<Option<&pg::Tenant>> {
        match &self.backend {
            Backend::Files => Ok(None),
            Backend::Postgres(t) => Ok(Some(t)),
            Backend::Unusable(msg) => Err(Error::parse(msg.clone())
                .with_hint("set LOBSTER_STORE (or --store) to postgres://USER@HOST/DB, file://DIR or files (unset: files), and LOBSTER_STORE_LEASE_MS, if set, to milliseconds")),
        }
    }

    /// Check that the store can be used now (PostgreSQL: connect, migrate
    /// if needed, one round trip), so a run is refused before its first
    /// step rather than when it pauses. The files store is always ready
    /// (its directory is made on first write).
    pub fn ping(&self) -> Result<()> {
        match self.pg()? {
            Some(pg) => pg.ping(),
            None => Ok(()),
        }
    }

    /// Remove what killed or failed writers left, older than `older_than`:
    /// files: temp and claim files and dangling approval aliases
    /// ([`super::sweep_orphans`]); PostgreSQL: approval aliases whose run is
    /// gone. Returns how many; never fails (a sweep must not fail a run).
    pub fn sweep_orphans(&self, older_than: Duration) -> usize {
        match self.pg() {
            Ok(Some(pg)) => pg.sweep_aliases(older_than).unwrap_or(0) as usize,
            Ok(None) => super::sweep_orphans(&self.dir, older_than),
            Err(_) => 0,
        }
    }

    /// [`StateStore::sweep_orphans`] with [`super::ORPHAN_AGE`], at most
    /// once per [`super::sweep::SWEEP_EVERY`] (files: per directory, by its
    /// marker file; PostgreSQL: per tenant and process).
    pub fn sweep_now_and_then(&self) {
        let Ok(Some(pg)) = self.pg() else {
            return super::sweep_now_and_then(&self.dir);
        };
        static LAST: std::sync::OnceLock<
            std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
        > = std::sync::OnceLock::new();
        let due = {
            let mut last = LAST
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let id = format!("{}\0{}", pg.db.shown(), pg.tenant);
            let due = last
                .get(&id)
                .is_none_or(|t| t.elapsed() >= super::sweep::SWEEP_EVERY);
            if due {
                last.insert(id, std::time::Instant::now());
            }
            due
        };
        if due {
            self.sweep_orphans(super::ORPHAN_AGE);
        }
    }

    /// Whether this is the files store.
    pub fn is_files(&self) -> bool {
        matches!(self.backend, Backend::Files)
    }

    /// The local directory: the files store's state, and in every case the
    /// node-local caches.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Create the directory (0700) if missing.
    pub fn ensure_dir(&self) -> Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| {
                Error::runtime(format!(
                    "cannot create state directory {}: {e}",
                    self.dir.display()
                ))
            })
    }

    /// The file that holds `key` (the files store; for PostgreSQL the name
    /// is the row key).
    pub fn path_for(&self, key: &str) -> Result<PathBuf> {
        Ok(self.dir.join(key_to_file_name(key)?))
    }

    /// Read `key`; `None` when there is no such key.
    pub fn get(&self, key: &str) -> Result<Option<Item>> {
        let Some(text) = self.get_text(key)? else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| match self.backend {
                Backend::Files => Error::runtime(format!(
                    "state file {} is not valid JSON: {e}",
                    self.path_for(key).unwrap_or_default().display()
                )),
                _ => Error::runtime(format!(
                    "state value {key:?} in {} is not valid JSON: {e}",
                    self.describe()
                )),
            })
    }

    /// The stored text of `key`, unparsed; `None` when there is no such key.
    pub fn get_text(&self, key: &str) -> Result<Option<String>> {
        if let Some(pg) = self.pg()? {
            let name = key_to_file_name(key)?;
            return if is_run_key(&name) {
                pg.run_get(&name)
            } else {
                pg.kv_get(&name)
            };
        }
        let path = self.path_for(key)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::runtime(format!(
                "cannot read state file {}: {e}",
                path.display()
            ))),
        }
    }

    /// Write `text` under `key` atomically (one file rename or one
    /// statement); `rerun`: a paused run's state says [`RERUN_SAFE`].
    fn put(&self, key: &str, text: String, rerun: bool) -> Result<()> {
        if let Some(pg) = self.pg()? {
            let name = key_to_file_name(key)?;
            return if is_run_key(&name) {
                pg.run_set(&name, text, rerun)
            } else {
                pg.kv_set(&name, text)
            };
        }
        self.ensure_dir()?;
        let path = self.path_for(key)?;
        write_atomic(&path, text.as_bytes())
            .map_err(|e| Error::runtime(format!("cannot write state file {}: {e}", path.display())))
    }

    /// Write `key` atomically as `JSON.stringify(value, null, 2) + "\n"`.
    pub fn set(&self, key: &str, value: &Item) -> Result<()> {
        let mut text = to_js_json_pretty(value);
        text.push('\n');
        self.put(key, text, is_rerun_safe(value))
    }

    /// Write `key` atomically as compact JSON, refusing (and writing nothing)
    /// when that is more than `max_bytes`. Returns the bytes written. For
    /// values an untrusted writer chose: a pretty-printed deeply nested value
    /// can be a hundred times its compact size.
    pub fn set_compact(&self, key: &str, value: &Item, max_bytes: usize) -> Result<usize> {
        let text = crate::value::to_js_json(value);
        if text.len() > max_bytes {
            return Err(Error::runtime(format!(
                "state value is {} bytes as stored (limit {max_bytes})",
                text.len()
            )));
        }
        let n = text.len();
        self.put(key, text, false)?;
        Ok(n)
    }

    /// Write `key` as compact JSON only if it is absent; whether it was
    /// written. Of many writers racing on one key, in one process or many,
    /// exactly one gets `true` (files: link(2) of a fsynced temp file, which
    /// fails when the name exists; PostgreSQL: `INSERT … ON CONFLICT DO
    /// NOTHING`). Not for resume states, which are claimed, not created.
    pub fn create_new(&self, key: &str, value: &Item) -> Result<bool> {
        let name = key_to_file_name(key)?;
        if is_run_key(&name) {
            return Err(Error::runtime(format!(
                "state key {key:?} is a paused run's; it cannot be created with create_new"
            )));
        }
        let text = crate::value::to_js_json(value);
        if let Some(pg) = self.pg()? {
            return pg.kv_insert_new(&name, text);
        }
        self.ensure_dir()?;
        let path = self.dir.join(&name);
        create_new_atomic(&path, text.as_bytes())
            .map_err(|e| Error::runtime(format!("cannot write state file {}: {e}", path.display())))
    }

    /// Every key/value whose stored key starts with `prefix`
    /// (`[a-z0-9][a-z0-9._-]*`, the stored form, lower-case), ordered by
    /// key, as `(stored key without ".json", value)`. Resume states are
    /// never listed. A key removed while listing is left out.
    pub fn list_prefix(&self, prefix: &str) -> Result<Vec<(String, Item)>> {
        let plain = prefix
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_alphanumeric)
            && prefix.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
            });
        if !plain {
            return Err(Error::runtime(format!(
                "state key prefix {prefix:?} must be [a-z0-9][a-z0-9._-]*"
            )));
        }
        let parse = |name: &str, text: &str| -> Result<Item> {
            serde_json::from_str(text).map_err(|e| {
                Error::runtime(format!(
                    "state value {name:?} in {} is not valid JSON: {e}",
                    self.describe()
                ))
            })
        };
        let mut out = Vec::new();
        if let Some(pg) = self.pg()? {
            for (name, text) in pg.kv_list_prefix(prefix)? {
                let key = name.strip_suffix(".json").unwrap_or(&name).to_string();
                out.push((key, parse(&name, &text)?));
            }
            return Ok(out);
        }
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(out),
            Err(e) => {
                return Err(Error::runtime(format!(
                    "cannot list state directory {}: {e}",
                    self.dir.display()
                )))
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix) && n.ends_with(".json") && !is_run_key(n))
            .collect();
        names.sort();
        for name in names {
            let Some(text) = self.get_text(&name[..name.len() - 5])? else {
                continue;
            };
            out.push((name[..name.len() - 5].to_string(), parse(&name, &text)?));
        }
        Ok(out)
    }

    /// How long ago `key` was last written (files: by its modification
    /// time; PostgreSQL: by the database's clock, so nodes whose clocks
    /// differ still agree); `None` when there is no such key.
    pub fn age(&self, key: &str) -> Result<Option<Duration>> {
        let name = key_to_file_name(key)?;
        if let Some(pg) = self.pg()? {
            return pg.kv_age(&name);
        }
        let path = self.dir.join(&name);
        match fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(t) => Ok(Some(t.elapsed().unwrap_or_default())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::runtime(format!(
                "cannot read state file {}: {e}",
                path.display()
            ))),
        }
    }

    /// Remove `key`; a missing key is not an error.
    pub fn remove(&self, key: &str) -> Result<()> {
        if let Some(pg) = self.pg()? {
            let name = key_to_file_name(key)?;
            return if is_run_key(&name) {
                pg.run_remove(&name)
            } else {
                pg.kv_remove(&name)
            };
        }
        let path = self.path_for(key)?;
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.dir).map_err(Error::from),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::runtime(format!(
                "cannot remove state file {}: {e}",
                path.display()
            ))),
        }
    }
}

/// The shortest and longest claim lease `LOBSTER_STORE_LEASE_MS` may set.
pub const LEASE_RANGE_MS: (u64, u64) = (500, 3_600_000);

/// `LOBSTER_STORE_LEASE_MS`: whole milliseconds within [`LEASE_RANGE_MS`].
fn parse_lease(text: &str) -> std::result::Result<Duration, String> {
    let (lo, hi) = LEASE_RANGE_MS;
    match text.trim().parse::<u64>() {
        Ok(ms) if (lo..=hi).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "LOBSTER_STORE_LEASE_MS must be a whole number of milliseconds from {lo} to {hi}, not {text:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn store_urls_choose_the_back_end() {
        let here = Path::new("/tmp/local");
        assert!(StateStore::open("", here).is_files());
        assert_eq!(StateStore::open("files", here).dir(), here);
        assert_eq!(
            StateStore::open("file:///srv/x", here).dir(),
            Path::new("/srv/x")
        );
        assert_eq!(StateStore::open("/srv/y", here).dir(), Path::new("/srv/y"));
        let pg = StateStore::open("postgresql://u@/db?host=/run", here);
        assert!(!pg.is_files());
        assert_eq!(pg.dir(), here);
        assert_eq!(pg.tenant(), DEFAULT_TENANT);
        let bad = StateStore::open("redis://h", here);
        assert!(bad
            .get("k")
            .unwrap_err()
            .to_string()
            .starts_with("unknown store"));
    }

    /// Each store names the tenant whose state it holds: the CLI's root
    /// store `default`; `for_tenant` and serve's tenant stores their tenant,
    /// serve's `default` kept apart from the root like any other; a name
    /// serve could not have is refused, never joined to a path.
    #[test]
    fn every_store_names_its_tenant() {
        let root = StateStore::new("/srv/state");
        assert_eq!(root.tenant(), DEFAULT_TENANT);
        assert_eq!(root.for_tenant("acme").tenant(), "acme");
        let acme = root.for_serve_tenant("acme").unwrap();
        assert_eq!(acme.tenant(), "acme");
        assert_eq!(acme.dir(), Path::new("/srv/state/tenants/acme"));
        let default = root.for_serve_tenant(DEFAULT_TENANT).unwrap();
        assert_eq!(default.tenant(), DEFAULT_TENANT);
        assert_eq!(default.dir(), Path::new("/srv/state/tenants/default"));
        assert_eq!(acme.for_serve_tenant("beta").unwrap().tenant(), "beta");
        assert_eq!(root.for_serve_tenant("_x").unwrap().tenant(), "_x");
        for bad in ["", "../acme", "Acme", "a/b", &"a".repeat(65)] {
            let e = root.for_serve_tenant(bad).unwrap_err().to_string();
            assert!(e.contains("must match [a-z0-9_-]{1,64}"), "{e}");
        }
    }

    #[test]
    fn leases_are_bounded() {
        assert_eq!(parse_lease(" 1500 ").unwrap(), Duration::from_millis(1500));
        for bad in ["499", "3600001", "1.5", "-1", "soon"] {
            let e = parse_lease(bad).unwrap_err();
            assert!(e.contains("from 500 to 3600000"), "{e}");
        }
    }

    #[test]
    fn compact_writes_are_bounded_in_stored_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path());
        let mut v = json!("x".repeat(1000));
        for _ in 0..100 {
            v = json!([v]);
        }
        let n = store.set_compact("deep", &v, 2000).unwrap();
        assert_eq!(n, 1000 + 2 + 200);
        assert_eq!(
            fs::metadata(store.path_for("deep").unwrap()).unwrap().len(),
            n as u64
        );
        assert_eq!(store.get("deep").unwrap(), Some(v.clone()));
        let err = store.set_compact("big", &v, 1000).unwrap_err();
        assert!(err.to_string().contains("limit 1000"), "{err}");
        assert!(!store.path_for("big").unwrap().exists());
    }

    #[test]
    fn set_get_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("nested"));
        assert_eq!(store.get("k").unwrap(), None);
        store.set("k", &json!({"a": [1, 2]})).unwrap();
        assert_eq!(store.get("K").unwrap(), Some(json!({"a": [1, 2]})));
        let text = fs::read_to_string(store.path_for("k").unwrap()).unwrap();
        assert_eq!(text, "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n");
        store.remove("k").unwrap();
        store.remove("k").unwrap();
        assert_eq!(store.get("k").unwrap(), None);
    }
}
