//! A capped in-memory stdout/stderr for guests. The first write that would
//! pass the cap traps the guest with [`OutputOverflow`], and the overflow is
//! remembered so the error can name the stream and the limit.

use bytes::Bytes;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// The trap a capped pipe raises when its cap is passed.
#[derive(Debug, thiserror::Error)]
#[error("output limit of {0} bytes reached")]
pub(crate) struct OutputOverflow(pub usize);

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    counted: usize,
    overflowed: bool,
}

/// A cloneable handle to one capped buffer.
#[derive(Clone)]
pub(crate) struct CappedPipe {
    cap: usize,
    inner: Arc<Mutex<Buffer>>,
}

impl CappedPipe {
    pub(crate) fn new(cap: usize) -> Self {
        CappedPipe {
            cap,
            inner: Arc::new(Mutex::new(Buffer::default())),
        }
    }

    /// Append `bytes`; `false` (and nothing appended) when that would pass the cap.
    pub(crate) fn push(&self, bytes: &[u8]) -> bool {
        let mut buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if buf.overflowed || buf.bytes.len() + buf.counted + bytes.len() > self.cap {
            buf.overflowed = true;
            return false;
        }
        buf.bytes.extend_from_slice(bytes);
        true
    }

    /// Count `n` bytes written elsewhere (log lines) against the cap without
    /// storing them; `false` when that passes the cap.
    pub(crate) fn account(&self, n: usize) -> bool {
        let mut buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if buf.overflowed || buf.bytes.len() + buf.counted + n > self.cap {
            buf.overflowed = true;
            return false;
        }
        buf.counted += n;
        true
    }

    /// Whether a write passed the cap.
    pub(crate) fn overflowed(&self) -> bool {
        self.inner.lock().map(|b| b.overflowed).unwrap_or(true)
    }

    /// Everything written so far.
    pub(crate) fn take(&self) -> Vec<u8> {
        let mut buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut buf.bytes)
    }

    /// The last `n` bytes as text, for error messages.
    pub(crate) fn tail(&self, n: usize) -> String {
        let buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let start = buf.bytes.len().saturating_sub(n);
        String::from_utf8_lossy(&buf.bytes[start..]).into_owned()
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if self.push(&bytes) {
            Ok(())
        } else {
            Err(StreamError::Trap(wasmtime::Error::new(OutputOverflow(
                self.cap,
            ))))
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        // Always grant a permit, so the write that passes the cap traps
        // instead of the guest spinning on a closed stream.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.push(buf) {
            Poll::Ready(Ok(buf.len()))
        } else {
            Poll::Ready(Err(io::Error::other(OutputOverflow(self.cap))))
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_past_cap_overflows_and_sticks() {
        let p = CappedPipe::new(5);
        assert!(p.push(b"abc"));
        assert!(!p.push(b"def"));
        assert!(p.overflowed());
        assert!(!p.push(b"x"));
        assert_eq!(p.take(), b"abc");
    }
}
