//! Run journals in PostgreSQL (schema version 4): `lobster_journal` rows
//! and `lobster_journal_runs` summaries (see `state/journal.rs`).

use super::{Tenant, ISO};
use crate::error::Result;
use crate::state::journal::{RunFilter, RunSummary, StoredRecord, SummaryUpdate};

const APPEND: &str = "INSERT INTO lobster_journal (tenant, run_id, seq, prev, hash, event)
     SELECT $1, $2, s, p, h, e FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[]) AS u(s, p, h, e)";

/// The records and the summary in one statement (a data-modifying `WITH`
/// runs whether or not the outer statement reads it).
const APPEND_WITH_SUMMARY: &str = "WITH ins AS (
       INSERT INTO lobster_journal (tenant, run_id, seq, prev, hash, event)
       SELECT $1, $2, s, p, h, e FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[]) AS u(s, p, h, e)
       RETURNING 1)
     INSERT INTO lobster_journal_runs AS r
         (tenant, run_id, name, door, status, started_at, ended_at, gate, head, events)
     VALUES ($1, $2, coalesce($7::text, ''), coalesce($8::text, ''), coalesce($9::text, 'running'),
             coalesce($10::text::timestamptz, now()), $11::text::timestamptz, $13, $14, $15)
     ON CONFLICT (run_id) DO UPDATE SET
         name = CASE WHEN $7::text IS NULL THEN r.name ELSE EXCLUDED.name END,
         door = CASE WHEN $8::text IS NULL THEN r.door ELSE EXCLUDED.door END,
         started_at = CASE WHEN $10::text IS NULL THEN r.started_at ELSE EXCLUDED.started_at END,
         status = coalesce($9::text, r.status),
         ended_at = coalesce($11::text::timestamptz, r.ended_at),
         gate = CASE WHEN $12::bool THEN $13::text ELSE r.gate END,
         head = CASE WHEN $15::bigint >= r.events THEN $14::text ELSE r.head END,
         events = greatest($15::bigint, r.events)
     WHERE r.tenant = EXCLUDED.tenant";

impl Tenant {
    /// Append `records` of run `run_id`, with its summary's change if any,
    /// in one statement.
    pub fn journal_append(
        &self,
        run_id: &str,
        records: Vec<StoredRecord>,
        summary: Option<SummaryUpdate>,
    ) -> Result<()> {
        let run = run_id.to_string();
        self.run("cannot write the journal to", move |c, t| {
            let mut seqs = Vec::with_capacity(records.len());
            let mut prevs = Vec::with_capacity(records.len());
            let mut hashes = Vec::with_capacity(records.len());
            let mut events = Vec::with_capacity(records.len());
            for r in records {
                seqs.push(r.seq as i64);
                prevs.push(r.prev);
                hashes.push(r.hash);
                events.push(r.event);
            }
            match summary {
                None => c.execute(APPEND, &[&t, &run, &seqs, &prevs, &hashes, &events]),
                Some(s) => {
                    let (name, door, started) = match s.started {
                        Some((n, d, a)) => (Some(n), Some(d), Some(a)),
                        None => (None, None, None),
                    };
                    let set_gate = s.gate.is_some() || s.clear_gate;
                    let gate = s.gate;
                    let n = s.events as i64;
                    c.execute(
                        APPEND_WITH_SUMMARY,
                        &[
                            &t,
                            &run,
                            &seqs,
                            &prevs,
                            &hashes,
                            &events,
                            &name,
                            &door,
                            &s.status,
                            &started,
                            &s.ended_at,
                            &set_gate,
                            &gate,
                            &s.head,
                            &n,
                        ],
                    )
                }
            }
            .map(drop)
        })
    }

    /// Run `run_id`'s records in order.
    pub fn journal_rows(&self, run_id: &str) -> Result<Vec<StoredRecord>> {
        let run = run_id.to_string();
        self.run("cannot read the journal from", move |c, t| {
            Ok(c.query(
                "SELECT seq, prev, hash, event FROM lobster_journal
                 WHERE tenant = $1 AND run_id = $2 ORDER BY seq",
                &[&t, &run],
            )?
            .into_iter()
            .map(|r| StoredRecord {
                seq: r.get::<_, i64>(0) as u64,
                prev: r.get(1),
                hash: r.get(2),
                event: r.get(3),
            })
            .collect())
        })
    }

    /// The summaries `filter` keeps, newest first.
    pub fn journal_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        let f = filter.clone();
        self.run("cannot list runs in", move |c, t| {
            let (before_at, before_id) = match f.before {
                Some((a, i)) => (Some(a), Some(i)),
                None => (None, None),
            };
            let limit = f.limit.map(|n| n as i64).unwrap_or(i64::MAX);
            let sql = format!(
                "SELECT run_id, name, door, status, to_char(started_at AT TIME ZONE 'UTC', {ISO}),
                        to_char(ended_at AT TIME ZONE 'UTC', {ISO}), gate, head, events
                 FROM lobster_journal_runs
                 WHERE tenant = $1 AND ($2::text IS NULL OR status = $2)
                   AND ($3::text IS NULL OR started_at >= $3::text::timestamptz)
                   AND ($4::text IS NULL OR (started_at, run_id) < ($4::text::timestamptz, $5::text))
                 ORDER BY started_at DESC, run_id DESC LIMIT $6"
            );
            Ok(c.query(
                &sql,
                &[&t, &f.status, &f.since, &before_at, &before_id, &limit],
            )?
            .into_iter()
            .map(summary)
            .collect())
        })
    }

    /// One run's summary.
    pub fn journal_summary(&self, run_id: &str) -> Result<Option<RunSummary>> {
        let run = run_id.to_string();
        self.run("cannot read runs in", move |c, t| {
            let sql = format!(
                "SELECT run_id, name, door, status, to_char(started_at AT TIME ZONE 'UTC', {ISO}),
                        to_char(ended_at AT TIME ZONE 'UTC', {ISO}), gate, head, events
                 FROM lobster_journal_runs WHERE tenant = $1 AND run_id = $2"
            );
            Ok(c.query_opt(&sql, &[&t, &run])?.map(summary))
        })
    }

    /// See [`crate::state::StateStore::journal_prune`].
    pub fn journal_prune(&self, cutoff: &str, keep: usize) -> Result<Vec<String>> {
        let cutoff = cutoff.to_string();
        let keep = keep as i64;
        self.run("cannot prune runs in", move |c, t| {
            Ok(c.query(
                "WITH ranked AS (
                   SELECT run_id, status, started_at,
                          row_number() OVER (ORDER BY started_at DESC, run_id DESC) - 1 AS i
                   FROM lobster_journal_runs WHERE tenant = $1),
                 doomed AS (
                   SELECT run_id FROM ranked
                   WHERE status NOT IN ('running', 'needs_approval', 'needs_input', 'pruned')
                     AND (started_at < $2::text::timestamptz OR i >= $3)),
                 gone AS (
                   DELETE FROM lobster_journal j USING doomed d
                   WHERE j.tenant = $1 AND j.run_id = d.run_id RETURNING 1)
                 UPDATE lobster_journal_runs r SET status = 'pruned', gate = NULL
                 FROM doomed d WHERE r.tenant = $1 AND r.run_id = d.run_id
                 RETURNING r.run_id",
                &[&t, &cutoff, &keep],
            )?
            .into_iter()
            .map(|r| r.get(0))
            .collect())
        })
    }
}

fn summary(r: postgres::Row) -> RunSummary {
    RunSummary {
        run_id: r.get(0),
        name: r.get(1),
        door: r.get(2),
        status: r.get(3),
        started_at: r.get(4),
        ended_at: r.get(5),
        gate: r.get(6),
        head: r.get(7),
        events: r.get::<_, i64>(8) as u64,
    }
}
