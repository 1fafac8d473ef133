//! Starting the server: its state from `serve.toml` ([`prepare`]: the root
//! store, every tenant, the link and session keys) and its run until
//! SIGTERM/SIGINT ([`run`]).

use super::state::AppState;
use super::tenant::Tenant;
use super::{approver, journal, link, listen, metrics, notify, queue, router, runs, shutdown};
use super::{Log, ServeConfig};
use crate::error::{Error, Result};
use crate::state::StateStore;
use std::net::SocketAddr;
use std::sync::Arc;

/// The store tenant of the server's own rows with a PostgreSQL store.
pub const SERVER_TENANT: &str = "lobster serve";

/// Build the state: the root store, every tenant (policy, catalog, store),
/// the approval-link key.
pub fn prepare(config: ServeConfig, log: Log) -> Result<AppState> {
    let root = match &config.store_url {
        // The server's own rows (link key, node heartbeats) under a tenant
        // id no configured tenant can have (names are [a-z0-9_-]; this one
        // is hex-encoded to `~…`), so no tenant's workflow can read them
        // with state.get, not even a tenant called `default`.
        Some(url) => StateStore::open(url, &config.state)
            .with_env_lease()
            .for_tenant(SERVER_TENANT),
        None => StateStore::new(&config.state),
    };
    root.ensure_dir()?;
    // A database that is down or refuses us is an error at start, naming it.
    root.ping()?;
    if !root.is_files() {
        runs::beat(&root, &config.node_id)?;
    }
    let metrics = Arc::new(metrics::Metrics::default());
    let mut tenants = Vec::new();
    for t in &config.tenants {
        let notifier = match (&t.notify_url, &config.notify_key) {
            (Some(url), Some(key)) => Some(notify::Notifier {
                url: url.clone(),
                key: key.clone(),
                timeout: config.notify_timeout,
                attempts: config.notify_attempts,
            }),
            _ => None,
        };
        let tenant = Tenant::new(t, &root, &metrics, config.request_timeout, notifier)?;
        tenants.push(Arc::new(tenant));
    }
    let link_key = link::LinkKey::load_or_create(&root)?;
    let session_key = approver::SessionKey::derive(link_key.bytes());
    Ok(AppState {
        public_url: config.public_url.clone().unwrap_or_default(),
        node: config.node_id.clone(),
        config,
        tenants,
        root,
        link_key,
        session_key,
        metrics,
        live: Default::default(),
        run_ended: Default::default(),
        shutting_down: Default::default(),
        log,
    })
}

/// Run the server until SIGTERM/SIGINT: bind `listen`, call `ready` with the
/// bound address, serve, then shut down gracefully. `workers` is the number
/// of async threads (runs use the blocking pool).
pub fn run(
    config: ServeConfig,
    listen: &str,
    workers: usize,
    log: Log,
    ready: impl FnOnce(SocketAddr),
) -> Result<()> {
    // A server runs many steps: the pooling allocator's set-up is paid once
    // and every step reuses a warm slot (runtime/benches/RESULTS.md).
    crate::sandbox::engine::prefer_pooling();
    let mut app = prepare(config, log)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| Error::parse(format!("cannot listen on {listen}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::runtime(format!("cannot read the bound address: {e}")))?;
        if app.public_url.is_empty() {
            app.public_url = format!("http://{addr}");
        }
        let app = Arc::new(app);
        if !app.root.is_files() {
            tokio::spawn(runs::keep_beating(app.clone()));
            queue::spawn_workers(&app, tokio::runtime::Handle::current());
        }
        tokio::spawn(journal::keep_pruning(app.clone()));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (drained_tx, drained_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(shutdown::watch(app.clone(), stop_tx, drained_tx));
        ready(addr);
        let limits = listen::ConnLimits {
            header_timeout: app.config.header_timeout,
            per_ip: app.config.max_connections_per_ip,
        };
        let served = listen::serve(listener, router::router(app.clone()), limits, async move {
            let _ = stop_rx.await;
        })
        .await;
        if served.is_ok() {
            let _ = drained_rx.await;
        }
        served.map_err(|e| Error::runtime(format!("the server failed: {e}")))
    })?;
    // Runs cancelled at shutdown have written their records; blocking
    // threads still stuck in a host process are abandoned with the process.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(())
}
