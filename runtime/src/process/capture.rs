//! Reading a child's stdout and stderr on threads, with a byte cap each, and
//! feeding its stdin on a thread that ignores a closed pipe.

use std::io::{ErrorKind, Read, Write};
use std::sync::mpsc::Sender;

/// Which output stream a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// `stdout` / `stderr`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// How reading one stream ended.
#[derive(Debug)]
pub(crate) enum Captured {
    /// End of file: everything the child wrote.
    Complete(Vec<u8>),
    /// The child wrote more than the cap; reading stopped.
    Overflow,
    /// The pipe failed (rare: EIO and the like).
    Failed(std::io::Error),
}

/// Read `pipe` to its end on a new thread, keeping at most `cap` bytes, and
/// send the result on `done`. Exceeding the cap stops reading at once (the
/// caller then kills the child's group).
pub(crate) fn spawn_reader<R>(
    stream: Stream,
    pipe: R,
    cap: Option<usize>,
    done: Sender<(Stream, Captured)>,
) -> std::io::Result<()>
where
    R: Read + Send + 'static,
{
    std::thread::Builder::new()
        .name(format!("lobster-{}", stream.name()))
        .spawn(move || {
            let result = read_capped(pipe, cap);
            // The receiver may have given up (cancelled run); nothing to do then.
            let _ = done.send((stream, result));
        })
        .map(|_| ())
}

fn read_capped(mut pipe: impl Read, cap: Option<usize>) -> Captured {
    let mut out = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return Captured::Complete(out),
            Ok(n) => {
                if cap.is_some_and(|cap| out.len() + n > cap) {
                    return Captured::Overflow;
                }
                out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Captured::Failed(e),
        }
    }
}

/// Write `bytes` to the child's stdin on a new thread, then close it.
///
/// Every write error is ignored: a child that exits (or closes stdin) without
/// reading everything gets EPIPE here, which must neither crash Lobster (the
/// reference's #122) nor fail the step by itself; the exit status decides.
/// The thread is not joined: if a stray grandchild keeps the pipe open without
/// reading, it stays blocked until that process dies.
pub(crate) fn spawn_writer<W>(mut pipe: W, bytes: Vec<u8>) -> std::io::Result<()>
where
    W: Write + Send + 'static,
{
    std::thread::Builder::new()
        .name("lobster-stdin".into())
        .spawn(move || {
            let _ = pipe.write_all(&bytes);
            let _ = pipe.flush();
            // Dropping `pipe` closes it: the child sees end of file.
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_is_inclusive() {
        let data = [b'x'; 10];
        assert!(matches!(read_capped(&data[..], Some(10)), Captured::Complete(v) if v.len() == 10));
        assert!(matches!(
            read_capped(&data[..], Some(9)),
            Captured::Overflow
        ));
        assert!(matches!(read_capped(&data[..], None), Captured::Complete(v) if v.len() == 10));
    }
}
