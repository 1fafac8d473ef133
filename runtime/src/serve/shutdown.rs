//! Graceful shutdown: on SIGTERM or SIGINT the server stops accepting
//! connections and new runs; runs going on get `shutdown_grace_ms` to
//! finish, then are cancelled (their records say so). Paused runs are
//! untouched: their resume state is in the store, so they resume after a
//! restart.

use super::runs::cancel_all;
use super::state::AppState;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long cancelled runs may take to write their records before the
/// process exits anyway (the app layer answers within its own 1 s grace).
const AFTER_CANCEL: Duration = Duration::from_secs(3);

/// Resolves on SIGTERM or SIGINT (the first of either).
pub async fn signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers there is nothing to wait for.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Wait for the signal, mark the server as stopping, tell `stop` (axum's
/// graceful shutdown), then drain the runs; `drained` fires when they are
/// all settled or cancelled.
pub async fn watch(app: Arc<AppState>, stop: oneshot::Sender<()>, drained: oneshot::Sender<()>) {
    signal().await;
    app.shutting_down.store(true, Ordering::SeqCst);
    (app.log)("lobster serve: shutting down (no new runs; waiting for the runs going on)");
    let _ = stop.send(());
    drain(&app).await;
    flush_run_logs(&app).await;
    let _ = drained.send(());
}

/// Put every run record still queued for a run log on disk before the
/// process exits.
async fn flush_run_logs(app: &Arc<AppState>) {
    let app = app.clone();
    let _ = tokio::task::spawn_blocking(move || {
        for t in &app.tenants {
            if let Some(Err(e)) = t.run_log.as_ref().map(|l| l.flush()) {
                (app.log)(&format!("lobster serve: tenant {}: {e}", t.name));
            }
        }
    })
    .await;
}

/// Let runs finish within the grace period, then cancel the rest.
pub async fn drain(app: &Arc<AppState>) {
    if !wait_idle(app, app.config.shutdown_grace).await {
        let n = cancel_all(app);
        (app.log)(&format!(
            "lobster serve: cancelled {n} run(s) still going on after shutdown_grace_ms"
        ));
        wait_idle(app, AFTER_CANCEL).await;
    }
}

/// Wait up to `limit` for no run to be going on; whether that happened.
async fn wait_idle(app: &Arc<AppState>, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let notified = app.run_ended.notified();
        if app.live_count() == 0 {
            return true;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return app.live_count() == 0;
        }
    }
}
