//! One tenant's paused runs (`lobster_runs`) and the claims that resume
//! them: exactly one claimer, leases, fenced heartbeats.

use super::{Tenant, ISO};
use crate::error::{Error, Result};

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

impl Tenant {
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
        Ok(self.run_get_rerunnable_epoch(key)?.map(|(body, _)| body))
    }

    /// [`Tenant::run_get_rerunnable`] with the claim epoch of the dead
    /// claim a take-over would replace (each claim has its own).
    pub fn run_get_rerunnable_epoch(&self, key: &str) -> Result<Option<(String, i64)>> {
        let key = key.to_string();
        self.run("cannot read from", move |c, t| {
            Ok(c.query_opt(
                "SELECT body, claim_epoch FROM lobster_runs WHERE tenant = $1 AND state_key = $2
                   AND status = 'resuming' AND rerun AND lease_until < now()",
                &[&t, &key],
            )?
            .map(|r| (r.get(0), r.get(1))))
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
}
