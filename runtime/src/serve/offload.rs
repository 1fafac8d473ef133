//! Store work off the async threads. A PostgreSQL store call blocks its
//! thread for a round trip to the database; `lobster serve` has few async
//! threads (`LOBSTER_SERVE_WORKERS`, default 2, and one per core it is
//! pinned to), so a handler that made its store calls on them would let
//! two requests' round trips at a time hold up every other request of the
//! node. Handlers hand those calls to the blocking pool instead.

use super::ApiError;

/// Run `f` on the blocking pool and await its answer.
pub async fn offload<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("a store call stopped unexpectedly: {e}")))?
}
