//! The pool: each [`Db`] owns up to [`MAX_CONNECTIONS`] worker threads,
//! each holding one connection, and runs a store call's closure on one of
//! them (see the module above for why).

use super::migrate::{latest, migrate, schema_version};
use super::{CONNECT_TIMEOUT, MAX_CONNECTIONS, STATEMENT_TIMEOUT};
use crate::error::{Error, Result};
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};
use std::collections::{HashMap, VecDeque};
use std::str::FromStr;
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};

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
}
