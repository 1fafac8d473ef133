//! One tenant's job queue (`lobster_queue`): enqueue with a notification,
//! take with `SKIP LOCKED`, fenced heartbeats, LISTEN for new jobs.

use super::Tenant;
use crate::error::Result;
use postgres::fallible_iterator::FallibleIterator;
use std::time::Duration;

impl Tenant {
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
}
