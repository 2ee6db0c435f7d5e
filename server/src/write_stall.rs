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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const LIMIT: Duration = Duration::from_secs(60);

    /// Writes into a 64-byte pipe nobody reads until the write fails; returns how long that took.
    async fn write_until_stalled(
        socket: &mut WriteStallTimeout<tokio::io::DuplexStream>,
    ) -> (Duration, io::Error) {
        let started = tokio::time::Instant::now();
        loop {
            if let Err(e) = socket.write_all(&[b'x'; 16]).await {
                return (started.elapsed(), e);
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_stops_reading_fails_the_write_after_the_limit() {
        let (ours, _peer) = tokio::io::duplex(64);
        let mut socket = WriteStallTimeout::new(ours, LIMIT);
        let (waited, error) = write_until_stalled(&mut socket).await;
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(
            waited >= LIMIT && waited < LIMIT + Duration::from_secs(1),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_up_is_not_cut_off() {
        let (ours, mut peer) = tokio::io::duplex(64);
        let mut socket = WriteStallTimeout::new(ours, LIMIT);
        // The peer reads 16 bytes every 50 s: each write waits less than the limit, and in
        // all far longer than it.
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_secs(50)).await;
                peer.read_exact(&mut buf).await.unwrap();
            }
            peer
        });
        let started = tokio::time::Instant::now();
        for _ in 0..(64 / 16 + 20) {
            socket.write_all(&[b'x'; 16]).await.unwrap();
        }
        assert!(started.elapsed() >= Duration::from_secs(900));
        let _peer = reader.await.unwrap();
        // Once the reader stops, the limit applies again.
        let (waited, error) = write_until_stalled(&mut socket).await;
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(waited >= LIMIT, "{waited:?}");
    }
}
