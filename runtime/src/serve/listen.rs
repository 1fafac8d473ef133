//! The gateway's accept loop: HTTP/1.1 connections served by hyper with a
//! timer, so a client that does not finish its request headers within
//! `header_timeout_ms` is disconnected (axum's own loop has no such bound,
//! and a few thousand half-open connections would hold the server's file
//! descriptors forever), and an optional cap on the connections one client
//! address holds open at once (`max_connections_per_ip`: off by default, as
//! behind a reverse proxy every client has the proxy's address). Past the
//! cap a connection gets one `503 too_many_connections` and is closed.
//! Shutdown stops accepting, lets requests in flight finish, and closes idle
//! keep-alive connections.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Bounds on connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// How long a client has to send a request's headers.
    pub header_timeout: Duration,
    /// Most connections open at once from one client address (`None`: no cap).
    pub per_ip: Option<usize>,
}

/// Open connections by client address.
#[derive(Default)]
struct Open(Mutex<HashMap<IpAddr, usize>>);

/// One counted connection; uncounted when dropped.
struct Slot {
    open: Arc<Open>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut m = self.open.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

fn admit(open: &Arc<Open>, ip: IpAddr, cap: Option<usize>) -> Option<Slot> {
    let mut m = open.0.lock().unwrap_or_else(|p| p.into_inner());
    let n = m.entry(ip).or_insert(0);
    if cap.is_some_and(|c| *n >= c) {
        return None;
    }
    *n += 1;
    Some(Slot {
        open: open.clone(),
        ip,
    })
}

const REFUSED: &str = "{\"error\":{\"type\":\"too_many_connections\",\"message\":\"this client address has max_connections_per_ip connections open; close one and retry\"}}";

/// Answer 503 on a connection past the cap (bounded: a client that does
/// not read gets a second, then the socket is closed).
async fn refuse(mut stream: TcpStream) {
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{REFUSED}",
        REFUSED.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Serve `router` on `listener` until `stop` resolves, then wait for the
/// connections to finish their requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let open = Arc::new(Open::default());
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors or a connection reset before accept:
                // the listener is fine; wait a little and go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Some(slot) = admit(&open, peer.ip(), limits.per_ip) else {
            tokio::spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout);
        let conn = builder.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
