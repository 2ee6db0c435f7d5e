//! A real [`HttpClient`] under the virtual clock: the clock stands still while a request or
//! its body is in flight, since the other side answers in real time.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;

use crate::http_client::{
    BoxByteStream, HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse,
};
use crate::platform::maybe_send::BoxFuture;
use crate::testing::clock::{ClockHold, VirtualRuntime};

/// Sends through `inner`, holding `clock` from the request until its body ends or is dropped.
pub(crate) struct HeldHttp {
    pub(crate) inner: Arc<dyn HttpClient>,
    pub(crate) clock: VirtualRuntime,
}

impl HttpClient for HeldHttp {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        let hold = self.clock.hold();
        let sent = self.inner.send(request);
        Box::pin(async move {
            let response = sent.await?;
            let (status, headers) = (response.status(), response.headers().clone());
            let body = HeldBody {
                body: Box::pin(response.into_body()),
                hold: Some(hold),
            };
            Ok(HttpResponse::new(
                status,
                headers,
                HttpBody::from_stream(body),
            ))
        })
    }
}

/// A body that keeps its request's hold until it ends.
struct HeldBody {
    body: BoxByteStream,
    hold: Option<ClockHold>,
}

impl Stream for HeldBody {
    type Item = Result<Bytes, HttpError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.body.as_mut().poll_next(cx);
        if let Poll::Ready(None | Some(Err(_))) = next {
            self.hold = None;
        }
        next
    }
}
