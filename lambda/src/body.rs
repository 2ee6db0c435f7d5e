//! The response body handed to the Lambda runtime: a complete JSON/file body, or a turn's
//! stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use http_body::{Body, Frame, SizeHint};
use runway_core::adapter::TurnBody;

/// Either a complete body or a streamed turn.
#[derive(Debug)]
pub enum LambdaBody {
    /// A complete body; `None` once sent.
    Full(Option<Bytes>),
    /// A turn's SSE stream.
    Stream(TurnBody),
}

impl LambdaBody {
    /// A complete body.
    pub fn full(bytes: Bytes) -> Self {
        Self::Full(Some(bytes).filter(|b| !b.is_empty()))
    }

    /// A streamed turn.
    pub fn stream(body: TurnBody) -> Self {
        Self::Stream(body)
    }
}

impl Body for LambdaBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Self::Stream(s) => Pin::new(s)
                .poll_next(cx)
                .map(|c| c.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Self::Full(None) => SizeHint::with_exact(0),
            Self::Stream(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;

    #[tokio::test]
    async fn full_body_yields_once() {
        let mut b = LambdaBody::full(Bytes::from_static(b"{}"));
        let first = poll_fn(|cx| Pin::new(&mut b).poll_frame(cx)).await;
        assert_eq!(
            first.unwrap().unwrap().into_data().unwrap(),
            Bytes::from_static(b"{}")
        );
        assert!(b.is_end_stream());
        assert!(
            poll_fn(|cx| Pin::new(&mut b).poll_frame(cx))
                .await
                .is_none()
        );
    }
}
