//! The PostgreSQL back end of [`super::StateStore`].
//!
//! The `postgres` crate is synchronous but drives a tokio runtime of its own
//! and panics when called from a thread inside another runtime's context
//! (e.g. tokio's `spawn_blocking` threads, where `lobster serve` calls the
//! store). So no caller ever touches a connection: each [`Db`] owns a few
//! worker threads (plain threads, started on demand, at most
//! [`MAX_CONNECTIONS`]), each holding one connection, and a store call sends
//! its statement to them and waits for the answer. That is the pool, and it
//! works the same from any thread.
//!
//! A worker connects on its first job (connect timeout [`CONNECT_TIMEOUT`],
//! then `statement_timeout` [`STATEMENT_TIMEOUT`]), brings the schema up to
//! date on the first connection of the process ([`migrate`]), and drops its
//! connection after any failed call (it may be broken), connecting afresh
//! for the next. A statement is never retried after it
//! was sent: a lost connection fails that call with an error naming the
//! database (password redacted), and every write is one statement, so nothing
//! is ever half-written.

mod journal;

use crate::error::{Error, Result};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};
use std::collections::{HashMap, VecDeque};
use std::str::FromStr;
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// The schema migrations, in order: (version, name, SQL). Each runs once, in
/// one transaction with its row in `lobster_schema_version`.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "0001_init",
        include_str!("../../migrations/0001_init.sql"),
    ),
    (
        2,
        "0002_queue",
        include_str!("../../migrations/0002_queue.sql"),
    ),
    (
        3,
        "0003_rerun",
        include_str!("../../migrations/0003_rerun.sql"),
    ),
    (
        4,
        "0004_journal",
        include_str!("../../migrations/0004_journal.sql"),
    ),
];

/// The channel an enqueue notifies (payload: the tenant).
pub const QUEUE_CHANNEL: &str = "lobster_queue";

/// How long one statement may run before the database cancels it.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections (worker threads) per database per process.
pub const MAX_CONNECTIONS: usize = 8;

/// Serialises concurrent migrations (any process, any node).
const MIGRATION_LOCK: i64 = 0x006c_6f62_7374_6572; // "lobster"

/// A call on a connection; returns whether it failed (its connection is
/// then dropped: a statement that failed may have left it broken).
type Job = Box<dyn FnOnce(Result<&mut Conn>) -> bool + Send>;

/// A pooled connection and the statements prepared on it. A statement sent
/// as text is parsed and planned by the server on every call and costs a
/// round trip of its own to prepare; each store statement is prepared once
/// per connection instead (by its SQL text), which halves the round trips
/// of a call and spares the database the parsing. The prepared statements
/// go with the connection (a failed call drops both).
pub struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Conn {
    fn statement(&mut self, sql: &str) -> std::result::Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// [`Client::execute`] with the statement prepared once.
    pub fn execute(
        &mut self,
        sql: &str,
        params: Params,
    ) -> std::result::Result<u64, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.execute(&s, params)
    }

    /// [`Client::query`] with the statement prepared once.
    pub fn query(
        &mut self,
        sql: &str,
        params: Params,
    ) -> std::result::Result<Vec<Row>, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.query(&s, params)
    }

    /// [`Client::query_opt`] with the statement prepared once.
    pub fn query_opt(
        &mut self,
        sql: &str,
        params: Params,
    ) -> std::result::Result<Option<Row>, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.query_opt(&s, params)
    }

    /// [`Client::query_one`] with the statement prepared once.
    pub fn query_one(
        &mut self,
        sql: &str,
        params: Params,
    ) -> std::result::Result<Row, postgres::Error> {
        let s = self.statement(sql)?;
        self.client.query_one(&s, params)
    }

    /// The connection itself (simple queries, transactions, notifications).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    idle: usize,
    workers: usize,
}

/// One database: its URL, its pool of worker connections.
pub struct Db {
    shown: String,
    config: std::result::Result<Config, String>,
    queue: Mutex<Queue>,
    ready: Condvar,
    migrated: Mutex<bool>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("url", &self.shown).finish()
    }
}

/// The pool for `url`, shared by every store of this process on that URL.
/// Nothing connects until the first call.
pub fn open(url: &str) -> Arc<Db> {
    static POOLS: OnceLock<Mutex<HashMap<String, Arc<Db>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    pools
        .entry(url.to_string())
        .or_insert_with(|| {
            let config = Config::from_str(url)
                .map(|mut c| {
                    c.connect_timeout(CONNECT_TIMEOUT);
                    if c.get_application_name().is_none() {
                        c.application_name("lobster");
                    }
                    c
                })
                .map_err(|e| e.to_string());
            Arc::new(Db {
                shown: redact(url),
                config,
                queue: Mutex::default(),
                ready: Condvar::new(),
                migrated: Mutex::new(false),
            })
        })
        .clone()
}

/// `url` with its password replaced by `***` (both `user:pw@` and
/// `password=pw` forms).
pub fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest = &out[scheme_end + 3..];
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if let Some(at) = rest[..auth_end].rfind('@') {
            if let Some(colon) = rest[..at].find(':') {
                let start = scheme_end + 3 + colon + 1;
                out.replace_range(start..scheme_end + 3 + at, "***");
            }
        }
    }
    if let Some(i) = out.find("password=") {
        let start = i + "password=".len();
        let end = out[start..]
            .find(['&', ' '])
            .map_or(out.len(), |e| start + e);
        out.replace_range(start..end, "***");
    }
    out
}

impl Db {
    /// The URL as shown in messages (password redacted).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// How many connections (worker threads) this pool has opened or is
    /// opening; never more than [`MAX_CONNECTIONS`].
    pub fn connections(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).workers
    }

    /// Run `f` on a pooled connection and wait for its answer. Works from
    /// any thread, including those inside a tokio runtime.
    pub fn run<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Conn) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(Box::new(move |conn| {
            let result = conn.and_then(f);
            let failed = result.is_err();
            let _ = tx.send(result);
            failed
        }));
        rx.recv()
            .map_err(|_| Error::runtime("a PostgreSQL store worker stopped unexpectedly"))?
    }

    fn submit(self: &Arc<Self>, job: Job) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.jobs.push_back(job);
        if q.idle == 0 && q.workers < MAX_CONNECTIONS {
            q.workers += 1;
            let db = self.clone();
            std::thread::Builder::new()
                .name("lobster-pg".into())
                .spawn(move || db.work())
                .expect("a thread can be started");
        }
        drop(q);
        self.ready.notify_one();
    }

    fn work(self: Arc<Self>) {
        let mut client: Option<Conn> = None;
        loop {
            let job = {
                let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                q.idle += 1;
                while q.jobs.is_empty() {
                    q = self.ready.wait(q).unwrap_or_else(|p| p.into_inner());
                }
                q.idle -= 1;
                q.jobs.pop_front().expect("not empty")
            };
            // A job that panics loses its answer (its caller gets an
            // error), not the worker. After a failed or panicked call the
            // connection is dropped (it may be broken or mid-statement);
            // the next call connects afresh.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                match self.connection(&mut client) {
                    Ok(c) => job(Ok(c)),
                    Err(e) => job(Err(e)),
                }
            }));
            if !matches!(ran, Ok(false)) {
                client = None;
            }
        }
    }

    /// This worker's connection, (re)connected and migrated as needed.
    fn connection<'a>(&self, slot: &'a mut Option<Conn>) -> Result<&'a mut Conn> {
        if slot.as_ref().is_some_and(|c| c.client.is_closed()) {
            *slot = None;
        }
        if slot.is_none() {
            let config = self.config.as_ref().map_err(|e| {
                Error::parse(format!("invalid PostgreSQL store URL {}: {e}", self.shown))
                    .with_hint("use postgres://USER[:PASSWORD]@HOST[:PORT]/DB or postgresql://USER@/DB?host=/socket/dir (LOBSTER_STORE or --store)")
            })?;
            let mut c = config
                .connect(NoTls)
                .map_err(|e| self.error("cannot connect to", e))?;
            c.batch_execute(&format!(
                "SET statement_timeout = {}",
                STATEMENT_TIMEOUT.as_millis()
            ))
            .map_err(|e| self.error("cannot configure the connection to", e))?;
            let mut migrated = self.migrated.lock().unwrap_or_else(|p| p.into_inner());
            if !*migrated {
                // Up to date (the common case): one read, no lock.
                if schema_version(&mut c) != Some(latest()) {
                    migrate(&mut c).map_err(|e| self.error("cannot migrate the schema of", e))?;
                }
                *migrated = true;
            }
            *slot = Some(Conn {
                client: c,
                prepared: HashMap::new(),
            });
        }
        Ok(slot.as_mut().expect("connected above"))
    }

    /// The error for a failed database operation: what failed, where, and
    /// what to do.
    pub fn error(&self, what: &str, e: postgres::Error) -> Error {
        let detail = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text.push_str(&format!(": {s}"));
                    source = s.source();
                }
                text
            }
        };
        let timeout = e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED);
        let msg = if timeout {
            format!(
                "{what} the PostgreSQL store at {}: a statement ran past statement_timeout ({} s): {detail}",
                self.shown,
                STATEMENT_TIMEOUT.as_secs()
            )
        } else {
            format!("{what} the PostgreSQL store at {}: {detail}", self.shown)
        };
        Error::runtime(format!("{msg} (this call wrote nothing; start the database, or choose another store with --store URL or LOBSTER_STORE, unset for the files store)")).with_hint(
            "check that the database is running and reachable from this host; the operation was refused and nothing was half-written",
        )
    }
}

/// The newest schema version this binary knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// The recorded schema version; `None` when there is none yet (or it
/// cannot be read: [`migrate`] then finds out why).
fn schema_version(c: &mut Client) -> Option<i32> {
    c.query_one(
        "SELECT coalesce(max(version), 0) FROM lobster_schema_version",
        &[],
    )
    .ok()
    .map(|r| r.get(0))
}

/// Bring the schema up to date: every migration newer than the recorded
/// version, each in its own transaction, under an advisory lock so racing
/// processes apply each exactly once. Returns the versions applied.
pub fn migrate(c: &mut Client) -> std::result::Result<Vec<i32>, postgres::Error> {
    let mut applied = Vec::new();
    let mut tx = c.transaction()?;
    tx.query("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS lobster_schema_version (
             version    integer     PRIMARY KEY,
             name       text        NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )?;
    let current: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM lobster_schema_version",
            &[],
        )?
        .get(0);
    if current > latest() {
        // A newer binary migrated this database: leave its schema alone
        // (migrations only add, so this binary's statements still fit).
        tx.rollback()?;
        return Ok(applied);
    }
    for (version, name, sql) in MIGRATIONS {
        if *version <= current {
            continue;
        }
        tx.batch_execute(sql)?;
        tx.execute(
            "INSERT INTO lobster_schema_version (version, name) VALUES ($1, $2)",
            &[version, name],
        )?;
        applied.push(*version);
    }
    tx.commit()?;
    Ok(applied)
}

/// One applied migration: version, name, when (ISO 8601, UTC).
pub type SchemaVersion = (i32, String, String);

/// What the database says about one paused run.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// `paused`, `resuming` or `interrupted`.
    pub status: String,
    /// The resume state as stored.
    pub body: String,
    /// When it was claimed (ISO 8601, UTC), if it was.
    pub claimed_at: Option<String>,
    /// Who claimed it (host and process id).
    pub claimed_by: Option<String>,
    /// Every step after the gate is pure: an expired claim is claimed again.
    pub rerun: bool,
    /// Until when the claim holds (ISO 8601, UTC), if it was claimed.
    pub lease_until: Option<String>,
}

const ISO: &str = r#"'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'"#;

/// One tenant's view of a [`Db`]: every statement filters by `tenant`.
#[derive(Debug, Clone)]
pub struct Tenant {
    /// The database.
    pub db: Arc<Db>,
    /// The tenant every row of this view carries.
    pub tenant: String,
    /// How long a claim holds without a heartbeat.
    pub lease: Duration,
}

impl Tenant {
    fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut Conn, &str) -> std::result::Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T> {
        let tenant = self.tenant.clone();
        let db = self.db.clone();
        self.db
            .run(move |c| f(c, &tenant).map_err(|e| db.error(what, e)))
    }

    /// One round trip on a pooled connection.
    pub fn ping(&self) -> Result<()> {
        self.run("cannot reach", |c, _| {
            c.client().simple_query("SELECT 1").map(drop)
        })
    }

    /// The value text under `key` in this tenant's key/value rows.
    pub fn kv_get(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_string();
        self.run("cannot read from", move |c, t| {
            Ok(c.query_opt(
                "SELECT value FROM lobster_kv WHERE tenant = $1 AND key = $2",
                &[&t, &key],
            )?
            .map(|r| r.get(0)))
        })
    }

    /// Write `key` (insert or replace, one statement).
    pub fn kv_set(&self, key: &str, value: String) -> Result<()> {
        let key = key.to_string();
        self.run("cannot write to", move |c, t| {
            c.execute(
                "INSERT INTO lobster_kv (tenant, key, value) VALUES ($1, $2, $3)
                 ON CONFLICT (tenant, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
                &[&t, &key, &value],
            )
            .map(drop)
        })
    }

    /// Write `key` only if it is absent; whether it was written.
    pub fn kv_insert_new(&self, key: &str, value: String) -> Result<bool> {
        let key = key.to_string();
        self.run("cannot write to", move |c, t| {
            Ok(c.execute(
                "INSERT INTO lobster_kv (tenant, key, value) VALUES ($1, $2, $3)
                 ON CONFLICT (tenant, key) DO NOTHING",
                &[&t, &key, &value],
            )? == 1)
        })
    }

    /// The `(key, value)` rows whose key starts with `prefix`, by key.
    pub fn kv_list_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        // LIKE with its wildcards and escape character escaped.
        let pattern = format!(
            "{}%",
            prefix
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        self.run("cannot read from", move |c, t| {
            Ok(c.query(
                "SELECT key, value FROM lobster_kv WHERE tenant = $1 AND key LIKE $2 ORDER BY key",
                &[&t, &pattern],
            )?
            .into_iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        })
    }

    /// How long ago `key` was last written, by the database's clock.
    pub fn kv_age(&self, key: &str) -> Result<Option<Duration>> {
        let key = key.to_string();
        self.run("cannot read from", move |c, t| {
            Ok(c.query_opt(
                "SELECT GREATEST(0, (EXTRACT(EPOCH FROM (now() - updated_at)) * 1000)::bigint)
                 FROM lobster_kv WHERE tenant = $1 AND key = $2",
                &[&t, &key],
            )?
            .map(|r| Duration::from_millis(r.get::<_, i64>(0) as u64)))
        })
    }

    /// Remove `key` (missing is fine).
    pub fn kv_remove(&self, key: &str) -> Result<()> {
        let key = key.to_string();
        self.run("cannot write to", move |c, t| {
            c.execute(
                "DELETE FROM lobster_kv WHERE tenant = $1 AND key = $2",
                &[&t, &key],
            )
            .map(drop)
        })
    }

    /// The resume state under `key` while it is paused (a claimed or
    /// interrupted run reads as gone, as a claimed file does).
    pub fn run_get(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_string();
        self.run("cannot read from", move |c, t| {
            Ok(c.query_opt(
                "SELECT body FROM lobster_runs WHERE tenant = $1 AND state_key = $2 AND status = 'paused'",
                &[&t, &key],
            )?
            .map(|r| r.get(0)))
        })
    }

    /// The resume state under `key` when its claim expired and the run is
    /// `rerun` (claimable again, see [`Tenant::claim`]).
    pub fn run_get_rerunnable(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_string();
        self.run("cannot read from", move |c, t| {
            Ok(c.query_opt(
                "SELECT body FROM lobster_runs WHERE tenant = $1 AND state_key = $2
                   AND status = 'resuming' AND rerun AND lease_until < now()",
                &[&t, &key],
            )?
            .map(|r| r.get(0)))
        })
    }

    /// Save a paused run's resume state; `rerun`: every step after its
    /// gate is pure, so a claim whose claimer died may be claimed again. A
    /// run that is claimed or interrupted is never turned back into a
    /// paused one (that would let it run again): that write is refused.
    pub fn run_set(&self, key: &str, body: String, rerun: bool) -> Result<()> {
        let name = key.to_string();
        let written = self.run("cannot write to", move |c, t| {
            c.execute(
                "INSERT INTO lobster_runs (tenant, state_key, body, status, rerun) VALUES ($1, $2, $3, 'paused', $4)
                 ON CONFLICT (tenant, state_key) DO UPDATE SET body = EXCLUDED.body, rerun = EXCLUDED.rerun
                 WHERE lobster_runs.status = 'paused'",
                &[&t, &name, &body, &rerun],
            )
        })?;
        if written == 1 {
            return Ok(());
        }
        Err(Error::runtime(format!(
            "cannot save resume state {key}: that run was already claimed (it is being resumed or was interrupted)"
        )))
    }

    /// Remove a run's row, whatever its status.
    pub fn run_remove(&self, key: &str) -> Result<()> {
        let key = key.to_string();
        self.run("cannot write to", move |c, t| {
            c.execute(
                "DELETE FROM lobster_runs WHERE tenant = $1 AND state_key = $2",
                &[&t, &key],
            )
            .map(drop)
        })
    }

    /// Claim the paused run `key`: exactly one caller gets its body and the
    /// new claim epoch; everyone else gets `None`. An expired claim is
    /// claimed again only when the run is `rerun` (its steps after the gate
    /// are pure); any other is never claimed again (see
    /// [`Tenant::run_status`]).
    pub fn claim(&self, key: &str, claimer: String) -> Result<Option<(String, i64)>> {
        let key = key.to_string();
        let lease = self.lease.as_secs_f64();
        self.run("cannot claim a run in", move |c, t| {
            Ok(c.query_opt(
                "UPDATE lobster_runs
                 SET status = 'resuming', claim_epoch = claim_epoch + 1,
                     lease_until = now() + make_interval(secs => $3),
                     claimed_at = now(), claimed_by = $4
                 WHERE tenant = $1 AND state_key = $2
                   AND (status = 'paused' OR (status = 'resuming' AND rerun AND lease_until < now()))
                 RETURNING body, claim_epoch",
                &[&t, &key, &lease, &claimer],
            )?
            .map(|r| (r.get(0), r.get(1))))
        })
    }

    /// Extend the lease of the claim `epoch` holds; `false` when that claim
    /// is no longer held (its lease expired and the run was marked
    /// interrupted): a fenced write.
    pub fn heartbeat(&self, key: &str, epoch: i64) -> Result<bool> {
        let key = key.to_string();
        let lease = self.lease.as_secs_f64();
        self.run("cannot extend a claim in", move |c, t| {
            Ok(c.execute(
                "UPDATE lobster_runs SET lease_until = now() + make_interval(secs => $4)
                 WHERE tenant = $1 AND state_key = $2 AND claim_epoch = $3
                   AND status = 'resuming' AND lease_until >= now()",
                &[&t, &key, &epoch, &lease],
            )? == 1)
        })
    }

    /// End the claim `epoch` holds (the resume finished): the run's row
    /// goes. `false` when the claim was no longer held.
    pub fn release(&self, key: &str, epoch: i64) -> Result<bool> {
        let key = key.to_string();
        self.run("cannot release a claim in", move |c, t| {
            Ok(c.execute(
                "DELETE FROM lobster_runs
                 WHERE tenant = $1 AND state_key = $2 AND claim_epoch = $3 AND status = 'resuming'",
                &[&t, &key, &epoch],
            )? == 1)
        })
    }

    /// The run's row, after turning an expired claim into `interrupted`
    /// (its claimer died or hung: it never runs again by itself) unless the
    /// run is `rerun` (its expired claim stays claimable).
    pub fn run_status(&self, key: &str) -> Result<Option<RunRow>> {
        let key = key.to_string();
        self.run("cannot read from", move |c, t| {
            c.execute(
                "UPDATE lobster_runs SET status = 'interrupted'
                 WHERE tenant = $1 AND state_key = $2 AND status = 'resuming'
                   AND lease_until < now() AND NOT rerun",
                &[&t, &key],
            )?;
            let sql = format!(
                "SELECT status, body, to_char(claimed_at AT TIME ZONE 'UTC', {ISO}), claimed_by,
                        rerun, to_char(lease_until AT TIME ZONE 'UTC', {ISO})
                 FROM lobster_runs WHERE tenant = $1 AND state_key = $2"
            );
            Ok(c.query_opt(&sql, &[&t, &key])?.map(|r| RunRow {
                status: r.get(0),
                body: r.get(1),
                claimed_at: r.get(2),
                claimed_by: r.get(3),
                rerun: r.get(4),
                lease_until: r.get(5),
            }))
        })
    }

    /// Remove this tenant's approval aliases older than `older_than` whose
    /// paused run is gone (a pause that failed after publishing its alias,
    /// with the database unreachable for the clean-up). Returns how many.
    pub fn sweep_aliases(&self, older_than: Duration) -> Result<u64> {
        let secs = older_than.as_secs_f64();
        self.run("cannot sweep", move |c, t| {
            c.execute(
                r"DELETE FROM lobster_kv k
                 WHERE k.tenant = $1 AND k.key LIKE 'approval\_%.json'
                   AND k.updated_at <= now() - make_interval(secs => $2)
                   AND NOT EXISTS (
                     SELECT 1 FROM lobster_runs r
                     WHERE r.tenant = k.tenant
                       AND r.state_key = lower(k.value::jsonb ->> 'stateKey') || '.json')",
                &[&t, &secs],
            )
        })
    }

    /// Queue job `id` with `payload` and wake the listeners (one
    /// statement: the notification is sent when the row commits). An error
    /// when `id` is already queued or running.
    pub fn enqueue(&self, id: &str, payload: String) -> Result<bool> {
        let id = id.to_string();
        self.run("cannot enqueue in", move |c, t| {
            Ok(c.query(
                "WITH ins AS (
                   INSERT INTO lobster_queue (tenant, id, payload, status) VALUES ($1, $2, $3, 'queued')
                   ON CONFLICT (tenant, id) DO NOTHING RETURNING 1)
                 SELECT pg_notify('lobster_queue', $1) FROM ins",
                &[&t, &id, &payload],
            )?
            .len()
                == 1)
        })
    }

    /// How many of the tenant's jobs are waiting to be taken.
    pub fn queue_depth(&self) -> Result<u64> {
        self.run("cannot count the queue in", move |c, t| {
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM lobster_queue WHERE tenant = $1 AND status = 'queued'",
                    &[&t],
                )?
                .get(0);
            Ok(n.max(0) as u64)
        })
    }

    /// Take the oldest queued job: exactly one taker gets each job, and
    /// takers skip each other's locked rows instead of waiting.
    pub fn take_job(&self, taker: String) -> Result<Option<(String, String, i64)>> {
        let lease = self.lease.as_secs_f64();
        self.run("cannot take a job from", move |c, t| {
            Ok(c.query_opt(
                "UPDATE lobster_queue q
                 SET status = 'running', epoch = q.epoch + 1,
                     lease_until = now() + make_interval(secs => $2), taken_by = $3
                 WHERE q.tenant = $1 AND q.id = (
                   SELECT id FROM lobster_queue
                   WHERE tenant = $1 AND status = 'queued'
                   ORDER BY enqueued_at, id
                   FOR UPDATE SKIP LOCKED LIMIT 1)
                 RETURNING q.id, q.payload, q.epoch",
                &[&t, &lease, &taker],
            )?
            .map(|r| (r.get(0), r.get(1), r.get(2))))
        })
    }

    /// Extend a taken job's lease (fenced by `epoch`); `false` when the
    /// job is no longer this taker's.
    pub fn job_heartbeat(&self, id: &str, epoch: i64) -> Result<bool> {
        let id = id.to_string();
        let lease = self.lease.as_secs_f64();
        self.run("cannot extend a job in", move |c, t| {
            Ok(c.execute(
                "UPDATE lobster_queue SET lease_until = now() + make_interval(secs => $4)
                 WHERE tenant = $1 AND id = $2 AND epoch = $3
                   AND status = 'running' AND lease_until >= now()",
                &[&t, &id, &epoch, &lease],
            )? == 1)
        })
    }

    /// Remove a finished job (fenced by `epoch`); `false` when it was no
    /// longer this taker's.
    pub fn finish_job(&self, id: &str, epoch: i64) -> Result<bool> {
        let id = id.to_string();
        self.run("cannot finish a job in", move |c, t| {
            Ok(c.execute(
                "DELETE FROM lobster_queue
                 WHERE tenant = $1 AND id = $2 AND epoch = $3 AND status = 'running'",
                &[&t, &id, &epoch],
            )? == 1)
        })
    }

    /// `queued`, `running` or `interrupted` (a taken job whose lease
    /// expired is marked so first); `None` when there is no such job.
    pub fn job_status(&self, id: &str) -> Result<Option<String>> {
        let id = id.to_string();
        self.run("cannot read from", move |c, t| {
            c.execute(
                "UPDATE lobster_queue SET status = 'interrupted'
                 WHERE tenant = $1 AND id = $2 AND status = 'running' AND lease_until < now()",
                &[&t, &id],
            )?;
            Ok(c.query_opt(
                "SELECT status FROM lobster_queue WHERE tenant = $1 AND id = $2",
                &[&t, &id],
            )?
            .map(|r| r.get(0)))
        })
    }

    /// Wait up to `timeout` for an enqueue of this tenant (LISTEN/NOTIFY).
    /// `true` when one came. A notification sent while nobody listened is
    /// lost, so callers also poll ([`Tenant::take_job`] after a timeout).
    pub fn wait_for_jobs(&self, timeout: Duration) -> Result<bool> {
        self.run("cannot listen on", move |c, t| {
            c.client().batch_execute("LISTEN lobster_queue")?;
            // A job enqueued after the caller found none and before LISTEN
            // sent no notification this connection will see: look once.
            let queued = c
                .query_opt(
                    "SELECT 1 FROM lobster_queue WHERE tenant = $1 AND status = 'queued' LIMIT 1",
                    &[&t],
                )?
                .is_some();
            let deadline = if queued {
                std::time::Instant::now()
            } else {
                std::time::Instant::now() + timeout
            };
            let mut woken = queued;
            loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                let next = c.client().notifications().timeout_iter(left).next()?;
                match next {
                    Some(n) if n.payload() == t => {
                        woken = true;
                        break;
                    }
                    Some(_) => continue,
                    None => break,
                }
            }
            c.client().batch_execute("UNLISTEN lobster_queue")?;
            Ok(woken)
        })
    }

    /// Apply pending migrations now; (versions applied, schema versions with
    /// names and times).
    pub fn migrate_now(&self) -> Result<(Vec<i32>, Vec<SchemaVersion>)> {
        self.run("cannot migrate the schema of", move |c, _| {
            let applied = migrate(c.client())?;
            let sql = format!(
                "SELECT version, name, to_char(applied_at AT TIME ZONE 'UTC', {ISO})
                 FROM lobster_schema_version ORDER BY version"
            );
            let rows = c
                .query(&sql, &[])?
                .into_iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect();
            Ok((applied, rows))
        })
    }
}

/// This host and process, as recorded in a claim.
pub fn claimer() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates
    // or truncates within it.
    let host = if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "?".to_string()
    };
    format!("{host} pid {}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("postgres://app:s3cret@db.example:5432/lobster"),
            "postgres://app:***@db.example:5432/lobster"
        );
        assert_eq!(
            redact("postgresql://postgres@/postgres?host=/tmp/x"),
            "postgresql://postgres@/postgres?host=/tmp/x"
        );
        assert_eq!(
            redact("postgres://u@h/db?password=pw&sslmode=disable"),
            "postgres://u@h/db?password=***&sslmode=disable"
        );
    }

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, (v, name, sql)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*v as usize, i + 1);
            assert!(name.starts_with(&format!("{v:04}_")), "{name}");
            assert!(sql.contains("lobster_"), "{name}");
        }
    }
}
