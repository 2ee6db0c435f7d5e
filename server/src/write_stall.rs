//! A socket whose writes give up when the peer stops reading.
//!
//! A client that keeps its connection open but reads nothing fills the socket's buffers;
//! hyper then waits in `poll_write` forever, holding the connection, its task and whatever
//! response bytes are queued. The engine ends such a turn at its deadline; this frees the
//! connection too: a write (or flush) that has made no progress for the limit fails with
//! `TimedOut`, and hyper closes the connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `inner`, with writes that fail after `limit` without progress.
pub struct WriteStallTimeout<T> {
    inner: T,
    limit: Duration,
    /// Running while a write is pending; reset by any write that makes progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteStallTimeout<T> {
    /// Wraps `inner`.
    pub fn new(inner: T, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            stalled: None,
        }
    }

    /// After the inner write returned `Pending`: `Pending` again, or `TimedOut` once the
    /// write has been pending for the limit.
    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<R>(&mut self, r: io::Result<R>) -> Poll<io::Result<R>> {
        self.stalled = None;
        Poll::Ready(r)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStallTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStallTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(r) => self.progressed(r),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => self.progressed(r),
            Poll::Pending => self.pending(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(r) => self.progressed(r),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
