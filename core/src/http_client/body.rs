//! A response body, read as a stream of byte chunks as they arrive.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::channel::oneshot;
use futures::future::{Fuse, Shared};
use futures::{FutureExt, Stream, StreamExt};

use super::error::HttpError;
use crate::platform::maybe_send::BoxFuture;

/// A boxed stream of body chunks, `Send` on native targets and local on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, HttpError>> + Send + 'static>>;
/// A boxed stream of body chunks, `Send` on native targets and local on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub type BoxByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, HttpError>> + 'static>>;

/// Resolves when the turn that made a request has ended.
pub(crate) type TurnEnded = Shared<oneshot::Receiver<()>>;

/// What ends a body early: the request's timeout or the turn's deadline, and the turn's end.
pub(crate) struct Bounds {
    pub(crate) expiry: Fuse<BoxFuture<'static, ()>>,
    pub(crate) expiry_error: HttpError,
    pub(crate) ended: TurnEnded,
}

/// The body of an [`HttpResponse`](super::HttpResponse): a [`Stream`] of byte chunks in the
/// order and sizes the network delivers them.
///
/// A body obtained through [`Turn::http`](crate::Turn::http) ends with
/// [`HttpError::TurnDeadline`] or [`HttpError::Timeout`] when time runs out and
/// [`HttpError::Cancelled`] when the turn ends, and closes the connection then. After an error
/// the stream ends.
pub struct HttpBody {
    inner: Option<BoxByteStream>,
    bounds: Option<Bounds>,
}

impl HttpBody {
    /// A body streamed from `stream` (what an [`HttpClient`](super::HttpClient) returns).
    pub fn from_stream(
        stream: impl Stream<Item = Result<Bytes, HttpError>>
        + crate::platform::maybe_send::MaybeSend
        + 'static,
    ) -> Self {
        Self {
            inner: Some(Box::pin(stream)),
            bounds: None,
        }
    }

    /// A body that is already complete.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self::from_stream(futures::stream::iter([Ok(bytes.into())]))
    }

    /// An empty body.
    pub fn empty() -> Self {
        Self::from_stream(futures::stream::empty())
    }

    pub(crate) fn bound(&mut self, bounds: Bounds) {
        self.bounds = Some(bounds);
    }

    /// The next chunk, or `None` at the end of the body.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        self.next().await.transpose()
    }

    fn stop(&mut self, error: HttpError) -> Poll<Option<Result<Bytes, HttpError>>> {
        // Dropping the platform's stream closes the connection / aborts the fetch.
        self.inner = None;
        self.bounds = None;
        Poll::Ready(Some(Err(error)))
    }
}

impl Stream for HttpBody {
    type Item = Result<Bytes, HttpError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(b) = this.bounds.as_mut() {
            if b.ended.poll_unpin(cx).is_ready() {
                return this.stop(HttpError::Cancelled);
            }
            if b.expiry.poll_unpin(cx).is_ready() {
                let e = b.expiry_error.clone();
                return this.stop(e);
            }
        }
        match inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                this.inner = None;
                this.bounds = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => this.stop(e),
            Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Ok(chunk))),
        }
    }
}

impl fmt::Debug for HttpBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBody")
            .field("finished", &self.inner.is_none())
            .finish()
    }
}
