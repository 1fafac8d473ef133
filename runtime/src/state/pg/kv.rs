//! One tenant's key/value rows (`lobster_kv`): `state.get`/`state.set`,
//! resume tokens and approval aliases.

use super::Tenant;
use crate::error::Result;
use std::time::Duration;

impl Tenant {
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
}
