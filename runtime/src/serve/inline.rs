//! Inline workflows (`workflowText`): the runner reads a workflow from a
//! file, so the text is kept as a file named by its blake3 digest in the
//! tenant's root (`<workdir>/.inline-<digest>.lobster|json`: the paths it
//! names resolve in the root like any file of the tenant's), and a later
//! resume re-reads it and checks its digest (pinned in the resume state
//! and the plan digest).
//!
//! With a PostgreSQL store the run may be resumed on another node, whose
//! disk never saw the file: the text also travels through the tenant's
//! store (`serve_inline_<digest>`, written before the run starts), and the
//! node that decides a gate puts back every inline document the paused run
//! depends on that is missing from its disk ([`materialise`]), after
//! checking that the stored text still hashes to the digest the run
//! pinned. A missing or altered text refuses the resume (409), the gate
//! still open.

use super::tenant::Tenant;
use super::ApiError;
use crate::state::StateStore;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};

const KEY: &str = "serve_inline_";

/// How an inline document's file name starts.
const PREFIX: &str = ".inline-";

fn key(digest: &str) -> String {
    format!("{KEY}{digest}")
}

/// Keep `doc` as the file the runner reads (and, on a shared store, in
/// the store too); returns the file's path. It runs under the tenant's
/// policy like any workflow file: it is untrusted input.
pub fn keep(tenant: &Tenant, doc: &str) -> Result<PathBuf, ApiError> {
    let ext = if doc.trim_start().starts_with('{') {
        "json"
    } else {
        "lobster"
    };
    let digest = blake3::hash(doc.as_bytes()).to_hex().to_string();
    if !tenant.store.is_files() {
        // Before the run starts: a node that resumes it reads it from here.
        tenant
            .store
            .create_new(&key(&digest), &json!({ "text": doc }))
            .map_err(|e| {
                ApiError::store(format!(
                    "run not started: cannot keep workflowText in the store: {e}"
                ))
            })?;
    }
    let path = tenant.workdir().join(format!("{PREFIX}{digest}.{ext}"));
    if !path.is_file() {
        write(&path, doc)
            .map_err(|e| ApiError::internal(format!("cannot keep workflowText: {e}")))?;
    }
    Ok(path)
}

fn write(path: &Path, doc: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::state::write_atomic(path, doc.as_bytes())
}

/// The digest an inline document's path names (`…/.inline-<64 hex>.lobster|json`).
fn inline_digest(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_prefix(PREFIX)?;
    let (stem, ext) = name.rsplit_once('.')?;
    let hex = stem.len() == 64 && stem.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && matches!(ext, "lobster" | "json")).then(|| stem.to_ascii_lowercase())
}

fn refused(run_id: &str, why: String) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "workflow_text_unavailable",
        format!("run {run_id} cannot be resumed on this node: {why}; its gate is still open. Start the run again to get a new gate"),
    )
}

/// Whether `path` is `<…>/<this tenant's root's name>/<file>`, absolute
/// and without `..`.
fn in_tenant_root(path: &Path, workdir: &Path) -> bool {
    use std::path::Component;
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    plain && path.parent().and_then(Path::file_name) == workdir.file_name()
}

/// Before the gate of `run_id` (resume token `token`) is decided on this
/// node: write every inline document its paused state depends on that is
/// missing from this node's disk, from the tenant's store, at the path the
/// run recorded (so nodes should share the state directory layout). The
/// text must hash to the digest the run pinned. Files stores: nothing to do.
pub fn materialise(
    store: &StateStore,
    workdir: &Path,
    run_id: &str,
    token: &str,
) -> Result<(), ApiError> {
    if store.is_files() {
        return Ok(());
    }
    // Only workflow states name files. The token comes from the run's
    // stored record; its MAC is checked by the resume itself, and the state
    // key it names is read from this tenant's store only, so it is read
    // here without the key (no store round trip for pipeline runs).
    let Some(state_key) = workflow_state_key(token) else {
        return Ok(());
    };
    let Some(state) = store.get(&state_key).map_err(ApiError::store)? else {
        return Ok(());
    };
    let DependsOn { files } = serde_json::from_value(state).unwrap_or_default();
    for PinnedFile {
        path,
        digest: pinned,
    } in files
    {
        let path = Path::new(&path);
        let Some(digest) = inline_digest(path) else {
            continue;
        };
        if path.is_file() {
            // Present: the resume re-hashes it against the pinned digest.
            continue;
        }
        // Only ever into a root of this tenant's name (the node that
        // paused the run may keep its roots elsewhere): a state row (anyone
        // who can write the database) cannot make a node write into a
        // directory of its choosing.
        if !in_tenant_root(path, workdir) {
            return Err(refused(
                run_id,
                format!(
                    "its inline workflow {} is not in this tenant's root",
                    path.display()
                ),
            ));
        }
        if digest != pinned {
            return Err(refused(
                run_id,
                format!(
                    "its inline workflow {} is not named by the digest the run pinned",
                    path.display()
                ),
            ));
        }
        let kept = store.get(&key(&digest)).map_err(ApiError::store)?;
        let kept = kept.and_then(|v| serde_json::from_value::<Kept>(v).ok());
        let Some(Kept { text }) = kept else {
            return Err(refused(
                run_id,
                format!("the workflowText it ran (blake3 {digest}) is not in the store"),
            ));
        };
        if blake3::hash(text.as_bytes()).to_hex().as_str() != digest {
            return Err(refused(
                run_id,
                format!(
                    "the workflowText kept in the store under blake3 {digest} no longer hashes to it (it was altered)"
                ),
            ));
        }
        write(path, &text).map_err(|e| {
            ApiError::internal(format!(
                "run {run_id}: cannot write its workflowText to {} on this node: {e} (give every node the same state directory path, LOBSTER_STATE_DIR)",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// The state key a workflow resume token names (unverified), `None` for
/// any other token.
fn workflow_state_key(token: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim().trim_end_matches('='))
        .ok()?;
    let payload: TokenPayload = serde_json::from_slice(&bytes).ok()?;
    (payload.kind == "workflow-file")
        .then_some(payload.state_key)
        .flatten()
}

/// What [`materialise`] reads of a paused workflow's state: the files the
/// run depends on, each with the digest it pinned (the rest of the state
/// is the resume's).
#[derive(Default, Deserialize)]
struct DependsOn {
    #[serde(default)]
    files: Vec<PinnedFile>,
}

/// A file a paused run depends on and its pinned blake3.
#[derive(Deserialize)]
struct PinnedFile {
    path: String,
    digest: String,
}

/// An inline document as the store keeps it (`{"text": …}`).
#[derive(Deserialize)]
struct Kept {
    text: String,
}

/// The fields of a resume token's payload read here (unverified).
#[derive(Deserialize)]
struct TokenPayload {
    kind: String,
    #[serde(rename = "stateKey")]
    state_key: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::{in_tenant_root, inline_digest, workflow_state_key};
    use std::path::Path;

    #[test]
    fn only_a_root_of_this_tenant_is_written() {
        let mine = Path::new("/srv/a/work/t-1");
        let ok = Path::new("/srv/b/work/t-1/.inline-ab.lobster");
        assert!(in_tenant_root(ok, mine));
        for bad in [
            "/etc/.inline-ab.lobster",
            "/srv/b/work/t-2/.inline-ab.lobster",
            "/srv/b/work/t-1/other/.inline-ab.lobster",
            "/srv/b/work/t-1/../t-1/.inline-ab.lobster",
            "srv/work/t-1/.inline-ab.lobster",
        ] {
            assert!(!in_tenant_root(Path::new(bad), mine), "{bad}");
        }
    }

    #[test]
    fn only_workflow_tokens_name_a_state_to_read() {
        use base64::Engine;
        let enc = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let wf = enc(serde_json::json!({"kind": "workflow-file", "stateKey": "workflow_resume_x"}));
        assert_eq!(
            workflow_state_key(&wf).as_deref(),
            Some("workflow_resume_x")
        );
        let pipe =
            enc(serde_json::json!({"kind": "pipeline-resume", "stateKey": "pipeline_resume_x"}));
        assert_eq!(workflow_state_key(&pipe), None);
        assert_eq!(workflow_state_key("not a token"), None);
    }

    #[test]
    fn only_inline_documents_named_by_a_digest_are_materialised() {
        let d = "a".repeat(64);
        assert_eq!(
            inline_digest(Path::new(&format!("/s/t/.inline-{d}.lobster"))),
            Some(d.clone())
        );
        assert_eq!(
            inline_digest(Path::new(&format!("/s/t/.inline-{d}.json"))),
            Some(d.clone())
        );
        assert_eq!(inline_digest(Path::new(&format!("/s/t/{d}.lobster"))), None);
        assert_eq!(
            inline_digest(Path::new(&format!("/s/t/.inline-{d}.sh"))),
            None
        );
        assert_eq!(inline_digest(Path::new("/s/t/.inline-abc.lobster")), None);
        assert_eq!(inline_digest(Path::new("/etc/passwd")), None);
    }
}
