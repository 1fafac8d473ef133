//! The schema: the migrations in order, applied once each under an
//! advisory lock.

use super::{Tenant, ISO};
use crate::error::Result;
use postgres::Client;

/// The schema migrations, in order: (version, name, SQL). Each runs once, in
/// one transaction with its row in `lobster_schema_version`.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "0001_init",
        include_str!("../../../migrations/0001_init.sql"),
    ),
    (
        2,
        "0002_queue",
        include_str!("../../../migrations/0002_queue.sql"),
    ),
    (
        3,
        "0003_rerun",
        include_str!("../../../migrations/0003_rerun.sql"),
    ),
    (
        4,
        "0004_journal",
        include_str!("../../../migrations/0004_journal.sql"),
    ),
];

/// Serialises concurrent migrations (any process, any node).
const MIGRATION_LOCK: i64 = 0x006c_6f62_7374_6572; // "lobster"

/// The newest schema version this binary knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// The recorded schema version; `None` when there is none yet (or it
/// cannot be read: [`migrate`] then finds out why).
pub(super) fn schema_version(c: &mut Client) -> Option<i32> {
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

impl Tenant {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, (v, name, sql)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*v as usize, i + 1);
            assert!(name.starts_with(&format!("{v:04}_")), "{name}");
            assert!(sql.contains("lobster_"), "{name}");
        }
    }
}
