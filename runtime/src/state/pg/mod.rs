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
//! date on the first connection of the process ([`migrate()`]), and drops its
//! connection after any failed call (it may be broken), connecting afresh
//! for the next. A statement is never retried after it
//! was sent: a lost connection fails that call with an error naming the
//! database (password redacted), and every write is one statement, so nothing
//! is ever half-written.
//!
//! The files: `pool` (the worker connections), `migrate` (the schema),
//! and one tenant's statements by table: `kv` (`lobster_kv`), `runs`
//! (`lobster_runs`: paused runs and their claims), `queue`
//! (`lobster_queue`) and `journal` (the run journals).

mod journal;
mod kv;
mod migrate;
mod pool;
mod queue;
mod runs;

pub use migrate::{latest, migrate, SchemaVersion, MIGRATIONS};
pub use pool::{open, redact, Conn, Db};
pub use runs::RunRow;

use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;

/// The channel an enqueue notifies (payload: the tenant).
pub const QUEUE_CHANNEL: &str = "lobster_queue";

/// How long one statement may run before the database cancels it.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections (worker threads) per database per process.
pub const MAX_CONNECTIONS: usize = 8;

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
