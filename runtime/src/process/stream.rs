//! A child whose stdout becomes items while it runs.
//!
//! [`Invocation::stream`] spawns the child like [`Invocation::run`] (own
//! process group, registered with the run's cancellation), then decodes its
//! stdout on a reader thread ([`super::decode`]) and hands items over in
//! batches through a bounded channel: memory stays bounded however much the
//! child writes, and a slow consumer makes the child block on its pipe.
//! Array elements are validated by the reader as it cuts them
//! ([`crate::value::raw::scan_element`]) and cross as raw bytes; the
//! consumer hands valid ones on unparsed ([`Lazy::Raw`], sharing their
//! batch) and parses the others with serde_json in [`OutputStream::pull`]
//! (the same items, or the same error, as parsing everything), so each
//! parsed item is allocated and freed on the consuming thread.
//!
//! The consumer pulls with [`OutputStream::pull`]; the exit status is known
//! only after stdout ends ([`Next::End`]). Dropping the stream before that
//! kills the child's whole process group and reaps the child: this is how
//! `head` stops an upstream `exec` early.

use super::capture::{spawn_reader, spawn_writer, Captured, Stream};
use super::decode::{decode_json_to, decode_lines, parse_element, Sink, Stop};
use super::signals::kill_group;
use super::spawn::{stop_after_cancel, CapSource, Finished, Invocation, Started};
use crate::error::{Error, Result};
use crate::kernel::{Cancel, Context, GroupGuard};
use crate::value::raw::Shape;
use crate::value::{Item, Lazy, RawItem};
use std::cell::{Cell, RefCell};
use std::io::{BufReader, ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Child;
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::time::Duration;

/// How stdout becomes items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoder {
    /// One JSON value; an array's elements are items (see [`super::decode::decode_json`]).
    Json,
    /// Each non-empty line is a string item (see [`super::decode::decode_lines`]).
    Lines,
}

/// Items per message between the reader thread and the consumer.
const BATCH: usize = 1024;
/// Messages buffered between the threads (so at most ~4k items in flight).
const IN_FLIGHT: usize = 3;
/// Bytes of stdout kept for an `exec failed` message when stderr is empty.
pub const STDOUT_KEPT: usize = 64 * 1024;
/// How often a blocked consumer looks at the cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// What [`OutputStream::pull`] found.
#[derive(Debug)]
pub enum Next {
    /// One more item (an array element may still be its validated text).
    Item(Lazy),
    /// stdout ended and the child was reaped.
    End(Ended),
}

/// How a streamed child ended.
#[derive(Debug)]
pub struct Ended {
    /// Exit status and stderr; `stdout` holds only its first
    /// [`STDOUT_KEPT`] bytes (the items were streamed).
    pub finished: Finished,
    /// Whether stdout was longer than what `finished.stdout` holds.
    pub stdout_truncated: bool,
    /// stdout was not valid JSON (only with [`Decoder::Json`]): the parser's
    /// message. Items before the error were yielded.
    pub parse_error: Option<String>,
}

enum Msg {
    Items(Vec<Item>),
    /// Array elements, not yet parsed.
    Raw(RawBatch),
    End {
        problem: Option<Problem>,
        kept: Vec<u8>,
        truncated: bool,
    },
}

/// The bytes of several array elements: where each is within `bytes`.
struct RawBatch {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

/// One element of a [`RawBatch`].
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    /// Its offset in the array (for parse errors).
    offset: usize,
    /// Validated (`Some(shape)`): it travels unparsed ([`Lazy::Raw`]).
    checked: Option<Shape>,
}

enum Problem {
    Parse(String),
    Overflow,
    Failed(std::io::Error),
}

/// A running child whose stdout is being decoded. See the module docs.
pub struct OutputStream {
    items: Receiver<Msg>,
    stderr: Receiver<(Stream, Captured)>,
    stderr_done: Option<Captured>,
    batch: std::vec::IntoIter<Item>,
    /// The batch being handed out, shared with the raw items taken from it.
    raw: Option<(std::rc::Rc<Vec<u8>>, Vec<Span>)>,
    raw_at: usize,
    /// Field count of the previous element (see [`parse_element`]).
    width: Cell<usize>,
    parse_error: Option<String>,
    child: Option<Child>,
    pgid: i32,
    cancel: Cancel,
    /// Where the output cap came from (the overflow message).
    cap_source: CapSource,
    _guard: GroupGuard,
}

impl Invocation {
    /// Spawn the child and decode its stdout into items as it arrives.
    ///
    /// Errors before the first item: spawning (not found, bad cwd) and
    /// cancellation. stdin bytes set with [`Invocation::stdin`] are fed on a
    /// thread; the output cap applies to stdout and stderr each.
    pub fn stream(&self, ctx: &Context, decoder: Decoder) -> Result<OutputStream> {
        let Started {
            mut child,
            pgid,
            cap,
            cap_source,
            guard,
        } = self.start(ctx)?;
        let mut out = OutputStream {
            items: mpsc::sync_channel(0).1,
            stderr: mpsc::channel().1,
            stderr_done: None,
            batch: Vec::new().into_iter(),
            raw: None,
            raw_at: 0,
            width: Cell::new(0),
            parse_error: None,
            child: None,
            pgid,
            cancel: ctx.cancel.clone(),
            cap_source,
            _guard: guard,
        };
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        // From here on, dropping `out` kills and reaps the child.
        out.child = Some(child);
        if let Some(pipe) = stdin {
            match self.stdin_bytes() {
                Some(bytes) if !bytes.is_empty() => spawn_writer(pipe, bytes.to_vec())?,
                _ => drop(pipe),
            }
        }
        if let Some(pipe) = stderr {
            let (tx, rx) = mpsc::channel();
            spawn_reader(Stream::Stderr, pipe, cap, tx)?;
            out.stderr = rx;
        } else {
            out.stderr_done = Some(Captured::Complete(Vec::new()));
        }
        let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
        out.items = rx;
        if let Some(pipe) = &stdout {
            widen_pipe(pipe.as_raw_fd());
        }
        if let Some(pipe) = stdout {
            std::thread::Builder::new()
                .name("lobster-stdout".into())
                .spawn(move || pump(pipe, cap, decoder, tx))?;
        } else {
            let _ = tx.send(Msg::End {
                problem: None,
                kept: Vec::new(),
                truncated: false,
            });
        }
        Ok(out)
    }
}

impl OutputStream {
    /// The next item, or the end of the child. `Err` for cancellation, an
    /// output over the cap, or a failing pipe; the child is killed then.
    /// Calling again after [`Next::End`] or an error is an error.
    pub fn pull(&mut self) -> Result<Next> {
        if let Some(item) = self.batch.next() {
            return Ok(Next::Item(Lazy::Parsed(item)));
        }
        if let Some(item) = self.next_element() {
            return Ok(Next::Item(item));
        }
        let result = self.refill();
        if result.is_err() {
            self.abort();
        }
        result
    }

    /// Parse the next raw array element, here on the consuming thread (so
    /// the item is allocated where it will be freed). A bad element is
    /// remembered; the rest of the output is then skipped up to the end,
    /// where the exit status decides which error wins.
    fn next_element(&mut self) -> Option<Lazy> {
        let (bytes, spans) = self.raw.as_ref()?;
        let Some(&span) = spans.get(self.raw_at) else {
            self.raw = None;
            return None;
        };
        self.raw_at += 1;
        if let Some(shape) = span.checked {
            return Some(Lazy::Raw(RawItem::shared(
                bytes.clone(),
                span.start,
                span.end,
                span.offset,
                shape,
            )));
        }
        let text = bytes.get(span.start..span.end).unwrap_or_default();
        match parse_element(text, span.offset, &self.width) {
            Ok(item) => Some(Lazy::Parsed(item)),
            Err(message) => {
                self.parse_error.get_or_insert(message);
                self.raw = None;
                None
            }
        }
    }

    fn refill(&mut self) -> Result<Next> {
        if self.child.is_none() {
            return Err(Error::runtime("the child's output already ended"));
        }
        loop {
            self.poll_stderr()?;
            self.cancel.check()?;
            match self.items.recv_timeout(CANCEL_POLL) {
                // After a bad element nothing more is yielded.
                Ok(Msg::Items(_) | Msg::Raw(_)) if self.parse_error.is_some() => {}
                Ok(Msg::Items(items)) => {
                    self.batch = items.into_iter();
                    if let Some(item) = self.batch.next() {
                        return Ok(Next::Item(Lazy::Parsed(item)));
                    }
                }
                Ok(Msg::Raw(raw)) => {
                    self.raw = Some((std::rc::Rc::new(raw.bytes), raw.spans));
                    self.raw_at = 0;
                    if let Some(item) = self.next_element() {
                        return Ok(Next::Item(item));
                    }
                }
                Ok(Msg::End {
                    problem,
                    kept,
                    truncated,
                }) => {
                    // An element that failed here came before whatever the
                    // reader found later; cap and pipe failures still win.
                    let problem = match (problem, self.parse_error.take()) {
                        (None | Some(Problem::Parse(_)), Some(first)) => {
                            Some(Problem::Parse(first))
                        }
                        (problem, _) => problem,
                    };
                    return self.end(problem, kept, truncated);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::runtime("reading child stdout failed"))
                }
            }
        }
    }

    /// Take a finished stderr capture if there is one; an overflow or a
    /// failure stops the child at once.
    fn poll_stderr(&mut self) -> Result<()> {
        if self.stderr_done.is_none() {
            match self.stderr.try_recv() {
                Ok((_, captured)) => self.stderr_done = Some(captured),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    return Err(Error::runtime("reading child stderr failed"))
                }
            }
        }
        match &self.stderr_done {
            Some(Captured::Overflow) => Err(self.cap_source.overflow("stderr")),
            Some(Captured::Failed(e)) => {
                Err(Error::runtime(format!("reading child stderr failed: {e}")))
            }
            _ => Ok(()),
        }
    }

    fn end(&mut self, problem: Option<Problem>, kept: Vec<u8>, truncated: bool) -> Result<Next> {
        let parse_error = match problem {
            None => None,
            Some(Problem::Parse(msg)) => Some(msg),
            Some(Problem::Overflow) => return Err(self.cap_source.overflow("stdout")),
            Some(Problem::Failed(e)) => {
                return Err(Error::runtime(format!("reading child stdout failed: {e}")))
            }
        };
        while self.stderr_done.is_none() {
            self.cancel.check()?;
            match self.stderr.recv_timeout(CANCEL_POLL) {
                Ok((_, captured)) => self.stderr_done = Some(captured),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::runtime("reading child stderr failed"))
                }
            }
        }
        self.poll_stderr()?;
        let stderr = match self.stderr_done.take() {
            Some(Captured::Complete(bytes)) => bytes,
            _ => Vec::new(),
        };
        let Some(mut child) = self.child.take() else {
            return Err(Error::runtime("the child's output already ended"));
        };
        let status = child.wait();
        if self.cancel.is_cancelled() {
            stop_after_cancel(self.pgid, &self.cancel);
            self.cancel.check()?;
        }
        let status = status?;
        Ok(Next::End(Ended {
            finished: Finished {
                stdout: String::from_utf8_lossy(&kept).into_owned(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
                code: status.code(),
                signal: status.signal(),
            },
            stdout_truncated: truncated,
            parse_error,
        }))
    }

    /// Kill the child's group and reap the child (if not done yet).
    fn abort(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(self.pgid, libc::SIGKILL);
            let _ = child.wait();
        }
    }
}

impl Drop for OutputStream {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Items decoded but not yet handed over; shared by the decoder (which
/// adds) and the [`Tap`] (which flushes before it may block on the pipe, so a
/// child that pauses never holds back items it already wrote).
struct Batcher {
    batch: Vec<Item>,
    raw: RawBatch,
    tx: SyncSender<Msg>,
    /// The consumer hung up.
    gone: bool,
}

impl Batcher {
    fn push(&mut self, item: Item) -> bool {
        self.batch.push(item);
        self.batch.len() < BATCH || self.flush()
    }

    fn flush(&mut self) -> bool {
        if !self.batch.is_empty() && !self.gone {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            self.gone = self.tx.send(Msg::Items(full)).is_err();
        }
        if !self.raw.spans.is_empty() && !self.gone {
            let full = std::mem::replace(&mut self.raw, RawBatch::new());
            self.gone = self.tx.send(Msg::Raw(full)).is_err();
        }
        !self.gone
    }

    fn is_empty(&self) -> bool {
        self.batch.is_empty() && self.raw.spans.is_empty()
    }
}

impl RawBatch {
    fn new() -> Self {
        RawBatch {
            bytes: Vec::with_capacity(64 * 1024),
            spans: Vec::with_capacity(BATCH),
        }
    }
}

/// The reader thread's sink: lines and single values as items, array
/// elements as raw bytes for the consumer to parse.
struct BatchSink<'a>(&'a RefCell<Batcher>);

impl Sink for BatchSink<'_> {
    fn item(&mut self, item: Item) -> bool {
        self.0.borrow_mut().push(item)
    }

    fn element(
        &mut self,
        bytes: &[u8],
        offset: usize,
        checked: Option<Shape>,
    ) -> Result<bool, Stop> {
        let mut batcher = self.0.borrow_mut();
        let start = batcher.raw.bytes.len();
        batcher.raw.bytes.extend_from_slice(bytes);
        let end = batcher.raw.bytes.len();
        batcher.raw.spans.push(Span {
            start,
            end,
            offset,
            checked,
        });
        Ok(batcher.raw.spans.len() < BATCH || batcher.flush())
    }
}

/// The reader thread: decode `pipe` into batches on `tx` until the end or
/// until the consumer hangs up.
fn pump(pipe: impl Read + AsRawFd, cap: Option<usize>, decoder: Decoder, tx: SyncSender<Msg>) {
    let batcher = Rc::new(RefCell::new(Batcher {
        batch: Vec::with_capacity(BATCH),
        raw: RawBatch::new(),
        tx: tx.clone(),
        gone: false,
    }));
    let mut tap = Tap {
        pipe,
        cap,
        read: 0,
        kept: Vec::new(),
        overflow: false,
        batcher: Some(batcher.clone()),
    };
    let result = {
        let mut emit = |item: Item| batcher.borrow_mut().push(item);
        let reader = BufReader::with_capacity(64 * 1024, &mut tap);
        match decoder {
            Decoder::Json => decode_json_to(reader, &mut BatchSink(&batcher)),
            Decoder::Lines => decode_lines(reader, &mut emit),
        }
    };
    tap.batcher = None;
    if batcher.borrow().gone {
        return;
    }
    let problem = match result {
        Err(Stop::Consumer) => return,
        Ok(()) => tap.drain().err(),
        Err(Stop::Parse(msg)) => Some(tap.drain().err().unwrap_or(Problem::Parse(msg))),
        Err(Stop::Io(e)) => Some(tap.problem(e)),
    };
    if !batcher.borrow_mut().flush() {
        return;
    }
    let truncated = tap.read > tap.kept.len();
    let _ = tx.send(Msg::End {
        problem,
        kept: tap.kept,
        truncated,
    });
}

/// Bytes the stdout pipe may hold (Linux's default is 64 KiB): a child
/// writing a large output then wakes the reader far less often.
const PIPE_BYTES: libc::c_int = 1 << 20;

/// Ask for a [`PIPE_BYTES`] pipe; the default stays if the kernel refuses
/// (`/proc/sys/fs/pipe-max-size`, or the user's pipe quota).
fn widen_pipe(fd: std::os::fd::RawFd) {
    // SAFETY: fcntl(F_SETPIPE_SZ) on a pipe fd we own; it changes only the
    // pipe's capacity and fails harmlessly otherwise.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
    }
}

/// Whether a read of `pipe` would return at once (data or end of file).
fn readable(pipe: &impl AsRawFd) -> bool {
    let mut fd = libc::pollfd {
        fd: pipe.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one valid pollfd with a zero timeout; it only
    // writes `revents` of that struct.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0
}

/// Counts the bytes read from the pipe against the cap, keeps the first
/// [`STDOUT_KEPT`] of them, and flushes decoded items before each read.
struct Tap<R> {
    pipe: R,
    cap: Option<usize>,
    read: usize,
    kept: Vec<u8>,
    overflow: bool,
    batcher: Option<Rc<RefCell<Batcher>>>,
}

impl<R: Read + AsRawFd> Read for Tap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.overflow {
            return Err(std::io::Error::other("output cap exceeded"));
        }
        if let Some(batcher) = &self.batcher {
            // Hand over what is decoded before waiting for the child; when
            // bytes are already there, keep filling the batch instead (fewer
            // wake-ups of the consumer).
            let waiting = !batcher.borrow().is_empty() && !readable(&self.pipe);
            if waiting && !batcher.borrow_mut().flush() {
                return Err(std::io::Error::other("the consumer went away"));
            }
        }
        let n = self.pipe.read(buf)?;
        self.read += n;
        if self.cap.is_some_and(|cap| self.read > cap) {
            self.overflow = true;
            return Err(std::io::Error::other("output cap exceeded"));
        }
        let room = STDOUT_KEPT.saturating_sub(self.kept.len()).min(n);
        self.kept.extend_from_slice(&buf[..room]);
        Ok(n)
    }
}

impl<R: Read + AsRawFd> Tap<R> {
    /// Read what is left (the child may keep writing after bad JSON; its
    /// exit status still decides the error).
    fn drain(&mut self) -> std::result::Result<(), Problem> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match self.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.problem(e)),
            }
        }
    }

    fn problem(&self, e: std::io::Error) -> Problem {
        if self.overflow {
            Problem::Overflow
        } else {
            Problem::Failed(e)
        }
    }
}
