//! A queue of jobs (runs to start) for whichever worker or node is free,
//! on either back end; meant for `lobster serve`.
//!
//! Each job is taken exactly once. PostgreSQL: `lobster_queue`, taken with
//! `FOR UPDATE SKIP LOCKED`, enqueues wake listeners with `NOTIFY`, a taken
//! job holds a lease and an epoch ([`Job::heartbeat`], [`Job::finish`] are
//! fenced by it), and a job whose taker died reads as `interrupted` once its
//! lease expired — it is never queued again, as a claimed run is never
//! claimed again. Files (one node): `queue/<time>-<id>.json`, taken by
//! rename(2) into `queue/running/` with the taker's pid in the name; a job
//! whose taker is no longer alive reads as `interrupted`.

use super::atomic::write_atomic;
use super::{key_to_file_name, StateStore};
use crate::error::{Error, Result};
use serde_json::Value;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting for a taker.
    Queued,
    /// Taken, its taker alive (lease current).
    Running,
    /// Taken, its taker gone: it will not run again by itself.
    Interrupted,
}

/// A job this worker took.
#[derive(Debug)]
pub struct Job {
    /// The id it was queued under.
    pub id: String,
    /// What was queued.
    pub payload: Value,
    epoch: i64,
    store: StateStore,
    running: Option<PathBuf>,
}

impl Job {
    /// Extend this job's lease; `false` when it is no longer this taker's
    /// (PostgreSQL: the lease expired and it was marked interrupted).
    /// Call it every third of the lease while the job runs.
    pub fn heartbeat(&self) -> Result<bool> {
        match self.store.pg()? {
            Some(pg) => pg.job_heartbeat(&safe(&self.id)?, self.epoch),
            None => Ok(self.running.as_ref().is_some_and(|p| p.exists())),
        }
    }

    /// The job is done: remove it. `false` when it was no longer this
    /// taker's (its record of being interrupted is then left alone).
    pub fn finish(self) -> Result<bool> {
        self.end()
    }

    /// [`Job::finish`], retried (with backoff) while it fails and the job's
    /// lease, counted from `confirmed` (its last heartbeat), lasts: a
    /// database restart at this moment does not leave a finished job to be
    /// read as interrupted. Fenced by the job's epoch like every retry.
    pub fn finish_retrying(self, confirmed: std::time::Instant) -> Result<bool> {
        let until = confirmed + self.store.lease();
        let mut pause = std::time::Duration::from_millis(50);
        loop {
            match self.end() {
                Err(_) if std::time::Instant::now() + pause < until => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_secs(1));
                }
                done => return done,
            }
        }
    }

    fn end(&self) -> Result<bool> {
        match self.store.pg()? {
            Some(pg) => pg.finish_job(&safe(&self.id)?, self.epoch),
            None => {
                let done = self
                    .running
                    .as_ref()
                    .is_some_and(|p| fs::remove_file(p).is_ok());
                let _ = fs::remove_file(ids_dir(&self.store).join(safe(&self.id)?));
                Ok(done)
            }
        }
    }
}

fn queue_dir(store: &StateStore) -> PathBuf {
    store.dir().join("queue")
}

fn ids_dir(store: &StateStore) -> PathBuf {
    queue_dir(store).join("ids")
}

fn running_dir(store: &StateStore) -> PathBuf {
    queue_dir(store).join("running")
}

/// The id as a file name part (the store's key normalisation).
fn safe(id: &str) -> Result<String> {
    let name = key_to_file_name(id)?;
    Ok(name.trim_end_matches(".json").to_string())
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::runtime(format!("cannot {what} {}: {e}", path.display()))
}

impl StateStore {
    /// Queue job `id` with `payload`. `false` (nothing queued) when a job
    /// with that id is already queued or running.
    pub fn enqueue(&self, id: &str, payload: &Value) -> Result<bool> {
        // Ids are keys: normalised (case-insensitive) alike by both stores;
        // the job keeps the id as given.
        let safe = safe(id)?;
        let text = crate::value::to_js_json(&serde_json::json!({"id": id, "payload": payload}));
        if let Some(pg) = self.pg()? {
            return pg.enqueue(&safe, text);
        }
        let ids = ids_dir(self);
        fs::create_dir_all(&ids).map_err(|e| io("create", &ids, e))?;
        fs::create_dir_all(running_dir(self)).map_err(|e| io("create", &running_dir(self), e))?;
        // The id marker is created only if absent: one enqueue per id.
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(ids.join(&safe))
        {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(io("create", &ids.join(&safe), e)),
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let path = queue_dir(self).join(format!("{nanos:024}-{safe}.json"));
        write_atomic(&path, text.as_bytes()).map_err(|e| {
            let _ = fs::remove_file(ids.join(&safe));
            io("write", &path, e)
        })?;
        Ok(true)
    }

    /// How many jobs wait to be taken (the gateway's queue depth).
    pub fn queue_depth(&self) -> Result<u64> {
        if let Some(pg) = self.pg()? {
            return pg.queue_depth();
        }
        Ok(queued(self).len() as u64)
    }

    /// Take the oldest queued job, if any: exactly one taker gets each.
    pub fn take_job(&self) -> Result<Option<Job>> {
        if let Some(pg) = self.pg()? {
            let Some((_, text, epoch)) = pg.take_job(super::pg::claimer())? else {
                return Ok(None);
            };
            let (id, payload) = unwrap_job(text.as_bytes());
            return Ok(Some(Job {
                id,
                payload,
                epoch,
                store: self.clone(),
                running: None,
            }));
        }
        for name in queued(self) {
            let from = queue_dir(self).join(&name);
            let to = running_dir(self).join(format!("{name}.{}", std::process::id()));
            match fs::rename(&from, &to) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(io("take", &from, e)),
            }
            let (id, payload) = unwrap_job(&fs::read(&to).unwrap_or_default());
            return Ok(Some(Job {
                id,
                payload,
                epoch: 1,
                store: self.clone(),
                running: Some(to),
            }));
        }
        Ok(None)
    }

    /// Where job `id` stands; `None` when there is no such job (never
    /// queued, or finished).
    pub fn job_status(&self, id: &str) -> Result<Option<JobStatus>> {
        if let Some(pg) = self.pg()? {
            return Ok(pg.job_status(&safe(id)?)?.map(|s| match s.as_str() {
                "queued" => JobStatus::Queued,
                "running" => JobStatus::Running,
                _ => JobStatus::Interrupted,
            }));
        }
        let safe = safe(id)?;
        let suffix = format!("-{safe}.json");
        if queued(self).iter().any(|n| n.ends_with(&suffix)) {
            return Ok(Some(JobStatus::Queued));
        }
        let running = fs::read_dir(running_dir(self))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .find_map(|n| {
                let (name, pid) = n.rsplit_once('.')?;
                name.ends_with(&suffix).then(|| pid.parse::<i32>().ok())?
            });
        Ok(running.map(|pid| {
            // SAFETY: signal 0 only checks that the process exists.
            if pid > 0 && unsafe { libc::kill(pid, 0) } == 0 {
                JobStatus::Running
            } else {
                JobStatus::Interrupted
            }
        }))
    }

    /// Wait up to `timeout` for a job to be queued: PostgreSQL listens for
    /// the enqueue's notification, files poll the directory. `true` when
    /// one may be there; callers poll [`StateStore::take_job`] either way.
    pub fn wait_for_jobs(&self, timeout: Duration) -> Result<bool> {
        if let Some(pg) = self.pg()? {
            return pg.wait_for_jobs(timeout);
        }
        let deadline = Instant::now() + timeout;
        loop {
            if !queued(self).is_empty() {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The id and payload of a stored job.
fn unwrap_job(bytes: &[u8]) -> (String, Value) {
    let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    (
        id,
        v.get_mut("payload").map(Value::take).unwrap_or(Value::Null),
    )
}

/// The queued job files, oldest first.
fn queued(store: &StateStore) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(queue_dir(store))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n.ends_with(".json"))
        .collect();
    names.sort();
    names
}
