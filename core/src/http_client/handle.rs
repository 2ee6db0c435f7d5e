//! [`Http`]: the agent's HTTP client for one turn, bounded by the turn's deadline and ended
//! with the turn.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::channel::oneshot;
use futures::{FutureExt, select_biased};

use super::body::{Bounds, TurnEnded};
use super::client::{HttpClient, HttpRequest};
use super::error::HttpError;
use super::response::HttpResponse;
use super::turn_clock::TurnClock;

/// Everything requests of one turn share.
struct TurnScope {
    client: Arc<dyn HttpClient>,
    clock: Arc<dyn TurnClock>,
    deadline_at_ms: u64,
    ended: TurnEnded,
}

/// Held by the turn: dropping it (the turn ended, or its future was dropped) ends every
/// request and body the turn's [`Http`] started, even one the agent moved elsewhere.
#[must_use = "dropping the guard ends every request of the turn"]
pub struct TurnHttpGuard {
    _alive: oneshot::Sender<()>,
}

/// The agent's HTTP client for one turn, from [`Turn::http`](crate::Turn::http).
///
/// - Every request ends by the turn's deadline ([`HttpError::TurnDeadline`]), or sooner with
///   [`RequestBuilder::timeout`]. The limit covers the whole exchange, body included.
/// - When the turn ends (the user pressed Stop, the client left, the deadline passed, the
///   agent returned) every request and body still open fails with [`HttpError::Cancelled`] and
///   its connection is closed. Dropping a request's future or a body closes it at once.
/// - The response body streams: [`HttpResponse::chunk`] returns each piece as it arrives.
/// - Nothing here logs or prints a URL, a query or a header value (`Debug` shows none).
///
/// It works the same on every runtime: `reqwest` on the local server and AWS Lambda, `fetch`
/// on Cloudflare Workers.
///
/// # Example
///
/// An agent that calls an API, then streams a long answer to the user as it arrives:
///
/// ```
/// use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
///
/// struct Weather;
///
/// impl Agent for Weather {
///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
///         let http = turn.http();
///         let now: serde_json::Value = http
///             .get("https://weather.example.com/now?city=Hanoi")
///             .bearer_auth("secret-token")
///             .send()
///             .await?
///             .error_for_status()?
///             .json()
///             .await?;
///         out.text(format!("It is {} in Hanoi. ", now["summary"]));
///
///         let mut report = http
///             .post("https://weather.example.com/report")
///             .json(&serde_json::json!({"city": "Hanoi"}))
///             .timeout(std::time::Duration::from_secs(60))
///             .send()
///             .await?
///             .error_for_status()?;
///         while let Some(chunk) = report.chunk().await? {
///             out.text(String::from_utf8_lossy(&chunk));
///         }
///         Ok(Outcome::Done)
///     }
/// }
/// # // Served by runway with an HTTP client, it reads a loopback server here:
/// # #[cfg(feature = "reqwest")]
/// # use runway_core::{adapter::{Config, MemoryStore, Runway, Reply, TokioRuntime}, http_client::ReqwestClient};
/// # #[cfg(not(feature = "reqwest"))]
/// # fn main() {}
/// # #[cfg(feature = "reqwest")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// #     let port = listener.local_addr().unwrap().port();
/// #     tokio::spawn(async move {
/// #         use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// #         for body in [&br#"{"summary":"sunny"}"#[..], b"Warm, then rain."] {
/// #             let (mut s, _) = listener.accept().await.unwrap();
/// #             let mut buf = [0u8; 4096];
/// #             let _ = s.read(&mut buf).await;
/// #             let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
/// #             s.write_all(head.as_bytes()).await.unwrap();
/// #             s.write_all(body).await.unwrap();
/// #         }
/// #     });
/// #     struct Local(u16);
/// #     impl runway_core::http_client::HttpClient for Local {
/// #         fn send(&self, mut r: runway_core::http_client::HttpRequest) -> runway_core::adapter::BoxFuture<'static, Result<runway_core::http_client::HttpResponse, runway_core::http_client::HttpError>> {
/// #             r.url = format!("http://127.0.0.1:{}{}", self.0, r.url.path()).parse().unwrap();
/// #             ReqwestClient::new().send(r)
/// #         }
/// #     }
/// #     let runway = Runway::new(Weather, MemoryStore::new(), TokioRuntime, Config::unauthenticated())
/// #         .with_http_client(Local(port));
/// #     let req = http::Request::post("/runs").body(bytes::Bytes::from(r#"{"threadId":"t","runId":"r","agentId":"a","workspaceId":"w","input":"hi","protocolVersion":"1"}"#)).unwrap();
/// #     let Reply::Stream { response, turn } = runway.handle(req).await else { panic!() };
/// #     let (_, body) = response.into_parts();
/// #     let (_, sse) = futures::join!(turn, futures::StreamExt::collect::<Vec<_>>(body));
/// #     let sse: String = sse.into_iter().map(|c| String::from_utf8_lossy(&c.unwrap()).into_owned()).collect();
/// #     assert!(sse.contains("sunny"), "{sse}");
/// #     assert!(sse.contains("Warm, then rain."), "{sse}");
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Http {
    scope: Option<Arc<TurnScope>>,
}

impl Http {
    /// The client of a turn that ends at `deadline` from now, and the guard whose drop ends its
    /// requests. Without a `client`, every request fails with [`HttpError::Unavailable`].
    // On wasm32 nothing is `Send` and there is one thread; `Arc` keeps one type for both.
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub(crate) fn for_turn(
        client: Option<Arc<dyn HttpClient>>,
        clock: Arc<dyn TurnClock>,
        deadline: Duration,
    ) -> (Self, TurnHttpGuard) {
        let (alive, ended) = oneshot::channel();
        let guard = TurnHttpGuard { _alive: alive };
        let Some(client) = client else {
            return (Self::default(), guard);
        };
        let deadline_at_ms = clock.now_ms().saturating_add(deadline.as_millis() as u64);
        let scope = TurnScope {
            client,
            clock,
            deadline_at_ms,
            ended: ended.shared(),
        };
        (
            Self {
                scope: Some(Arc::new(scope)),
            },
            guard,
        )
    }

    /// The same turn's client (same deadline, ended with the same turn) sending through
    /// `client` instead: for requests that need another policy than the platform's client,
    /// such as attachment downloads through an address-filtering client. `None` without a
    /// turn client (nothing can be sent then either).
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub fn with_client(&self, client: Arc<dyn HttpClient>) -> Option<Self> {
        let s = self.scope.as_ref()?;
        let scope = TurnScope {
            client,
            clock: s.clock.clone(),
            deadline_at_ms: s.deadline_at_ms,
            ended: s.ended.clone(),
        };
        Some(Self {
            scope: Some(Arc::new(scope)),
        })
    }

    /// True if this runtime gave the agent an HTTP client.
    pub fn is_available(&self) -> bool {
        self.scope.is_some()
    }

    /// Time left before the turn's deadline (`None` without a client).
    pub fn time_left(&self) -> Option<Duration> {
        let s = self.scope.as_ref()?;
        Some(Duration::from_millis(
            s.deadline_at_ms.saturating_sub(s.clock.now_ms()),
        ))
    }

    /// A request with any method.
    pub fn request(&self, method: http::Method, url: &str) -> RequestBuilder {
        RequestBuilder {
            http: self.clone(),
            method,
            url: url::Url::parse(url)
                .map_err(|e| HttpError::InvalidRequest(format!("bad URL: {e}")))
                .and_then(|u| match u.scheme() {
                    "http" | "https" => Ok(u),
                    _ => Err(HttpError::InvalidRequest(
                        "the URL scheme must be http or https".into(),
                    )),
                }),
            headers: http::HeaderMap::new(),
            body: Bytes::new(),
            timeout: None,
            error: None,
        }
    }

    /// A `GET` request.
    pub fn get(&self, url: &str) -> RequestBuilder {
        self.request(http::Method::GET, url)
    }

    /// A `POST` request.
    pub fn post(&self, url: &str) -> RequestBuilder {
        self.request(http::Method::POST, url)
    }

    /// A `PUT` request.
    pub fn put(&self, url: &str) -> RequestBuilder {
        self.request(http::Method::PUT, url)
    }

    /// A `PATCH` request.
    pub fn patch(&self, url: &str) -> RequestBuilder {
        self.request(http::Method::PATCH, url)
    }

    /// A `DELETE` request.
    pub fn delete(&self, url: &str) -> RequestBuilder {
        self.request(http::Method::DELETE, url)
    }
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("available", &self.is_available())
            .field("time_left", &self.time_left())
            .finish()
    }
}

/// A request being built by [`Http`]; [`RequestBuilder::send`] sends it. A mistake (a bad URL
/// or header) is reported by `send`.
pub struct RequestBuilder {
    http: Http,
    method: http::Method,
    url: Result<url::Url, HttpError>,
    headers: http::HeaderMap,
    body: Bytes,
    timeout: Option<Duration>,
    error: Option<HttpError>,
}

impl RequestBuilder {
    /// Adds a header. Values are marked sensitive and never printed.
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        http::HeaderName: TryFrom<K>,
        http::HeaderValue: TryFrom<V>,
    {
        let Ok(name) = http::HeaderName::try_from(name) else {
            self.error
                .get_or_insert(HttpError::InvalidRequest("invalid header name".into()));
            return self;
        };
        match http::HeaderValue::try_from(value) {
            Ok(mut value) => {
                value.set_sensitive(true);
                self.headers.append(name, value);
            }
            Err(_) => {
                self.error.get_or_insert(HttpError::InvalidRequest(format!(
                    "invalid value for header {name}"
                )));
            }
        }
        self
    }

    /// Adds `Authorization: Bearer {token}`.
    pub fn bearer_auth(self, token: impl fmt::Display) -> Self {
        self.header(http::header::AUTHORIZATION, format!("Bearer {token}"))
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the body to `value` as JSON, with `Content-Type: application/json`.
    pub fn json<T: serde::Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => {
                self.body = body.into();
                self.headers.insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/json"),
                );
            }
            Err(e) => {
                self.error
                    .get_or_insert(HttpError::InvalidRequest(format!("JSON body: {e}")));
            }
        }
        self
    }

    /// Limits the whole exchange (connect, response, body) to `timeout`, or the turn's
    /// deadline if that comes first.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the request. Resolves when the status and headers are in; the body streams.
    pub async fn send(self) -> Result<HttpResponse, HttpError> {
        let Some(scope) = self.http.scope.clone() else {
            return Err(HttpError::Unavailable);
        };
        if let Some(e) = self.error {
            return Err(e);
        }
        let url = self.url?;
        let method = self.method;
        let started = scope.clock.now_ms();
        let left = Duration::from_millis(scope.deadline_at_ms.saturating_sub(started));
        let (wait, expiry_error) = match self.timeout {
            Some(t) if t < left => (t, HttpError::Timeout(t)),
            _ => (left, HttpError::TurnDeadline),
        };
        if wait.is_zero() {
            return Err(expiry_error);
        }
        let mut ended = scope.ended.clone();
        let mut expiry = scope.clock.sleep(wait).fuse();
        let request = HttpRequest {
            method: method.clone(),
            url,
            headers: self.headers,
            body: self.body,
        };
        let mut sent = scope.client.send(request).fuse();
        let result = select_biased! {
            _ = ended => Err(HttpError::Cancelled),
            _ = expiry => Err(expiry_error.clone()),
            r = sent => r,
        };
        let elapsed_ms = scope.clock.now_ms().saturating_sub(started);
        match result {
            Ok(mut response) => {
                tracing::debug!(
                    method = %method,
                    status = response.status().as_u16(),
                    elapsed_ms,
                    "agent HTTP request answered"
                );
                response.body_mut().bound(Bounds {
                    expiry,
                    expiry_error,
                    ended: scope.ended.clone(),
                });
                Ok(response)
            }
            Err(e) => {
                tracing::debug!(method = %method, elapsed_ms, error = %e, "agent HTTP request failed");
                Err(e)
            }
        }
    }
}

impl fmt::Debug for RequestBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBuilder")
            .field("method", &self.method)
            .field("url", &"<redacted>")
            .field("headers", &super::client::HeaderNames(&self.headers))
            .field("body_bytes", &self.body.len())
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use futures::StreamExt;

    use super::*;
    use crate::http_client::{HttpBody, HttpRequest};
    use crate::platform::maybe_send::BoxFuture;

    /// tokio's (paused) clock.
    struct TestClock(tokio::time::Instant);

    impl TurnClock for TestClock {
        fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
            Box::pin(tokio::time::sleep(duration))
        }
        fn now_ms(&self) -> u64 {
            self.0.elapsed().as_millis() as u64
        }
    }

    /// Answers at once with a body that never ends, or never answers at all; notes when the
    /// body it handed out is dropped.
    struct Stalling {
        answer: bool,
        body_dropped: Arc<AtomicBool>,
        seen: Arc<std::sync::Mutex<Option<String>>>,
    }

    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    impl HttpClient for Stalling {
        fn send(
            &self,
            request: HttpRequest,
        ) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
            *self.seen.lock().unwrap() = Some(format!("{request:?}"));
            if !self.answer {
                return Box::pin(futures::future::pending());
            }
            let flag = DropFlag(self.body_dropped.clone());
            let body = futures::stream::once(async { Ok(Bytes::from_static(b"first")) }).chain(
                futures::stream::poll_fn(move |_| {
                    let _keep = &flag;
                    std::task::Poll::Pending
                }),
            );
            Box::pin(async move {
                Ok(HttpResponse::new(
                    http::StatusCode::OK,
                    http::HeaderMap::new(),
                    HttpBody::from_stream(body),
                ))
            })
        }
    }

    fn turn_http(answer: bool, deadline: Duration) -> (Http, TurnHttpGuard, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let client = Stalling {
            answer,
            body_dropped: dropped.clone(),
            seen: Default::default(),
        };
        let (http, guard) = Http::for_turn(
            Some(Arc::new(client)),
            Arc::new(TestClock(tokio::time::Instant::now())),
            deadline,
        );
        (http, guard, dropped)
    }

    #[tokio::test(start_paused = true)]
    async fn the_turn_deadline_bounds_a_longer_request_timeout_body_included() {
        let (http, _guard, dropped) = turn_http(true, Duration::from_secs(5));
        let start = tokio::time::Instant::now();
        let mut r = http
            .get("https://api.example.com/x")
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap();
        assert_eq!(r.chunk().await.unwrap().as_deref(), Some(&b"first"[..]));
        assert_eq!(r.chunk().await, Err(HttpError::TurnDeadline));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert!(
            dropped.load(Ordering::SeqCst),
            "the connection was released"
        );
        assert_eq!(r.chunk().await, Ok(None), "the body ends after an error");
        // Later requests fail at once.
        let late = http.get("https://api.example.com/y").send().await;
        assert_eq!(late.unwrap_err(), HttpError::TurnDeadline);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_request_timeout_wins() {
        let (http, _guard, _) = turn_http(false, Duration::from_secs(5));
        let start = tokio::time::Instant::now();
        let r = http
            .get("https://api.example.com/x")
            .timeout(Duration::from_secs(1))
            .send()
            .await;
        assert_eq!(r.unwrap_err(), HttpError::Timeout(Duration::from_secs(1)));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn the_turn_ending_cancels_pending_requests_and_bodies() {
        let (http, guard, dropped) = turn_http(true, Duration::from_secs(60));
        let mut body = http
            .get("https://api.example.com/x")
            .send()
            .await
            .unwrap()
            .into_body();
        assert!(body.next().await.unwrap().is_ok());
        let (stalled, stalled_guard, _) = turn_http(false, Duration::from_secs(60));
        let pending = tokio::spawn(async move { stalled.get("https://a.example/").send().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(guard);
        drop(stalled_guard);
        assert_eq!(body.next().await, Some(Err(HttpError::Cancelled)));
        assert!(dropped.load(Ordering::SeqCst));
        assert_eq!(pending.await.unwrap().unwrap_err(), HttpError::Cancelled);
        let after = http.get("https://api.example.com/x").send().await;
        assert_eq!(after.unwrap_err(), HttpError::Cancelled);
    }

    #[tokio::test]
    async fn without_a_client_requests_fail_clearly() {
        let http = Http::default();
        assert!(!http.is_available());
        let r = http.get("https://api.example.com").send().await;
        assert_eq!(r.unwrap_err(), HttpError::Unavailable);
    }

    #[tokio::test(start_paused = true)]
    async fn bad_requests_are_refused_without_repeating_the_value() {
        let (http, _guard, _) = turn_http(true, Duration::from_secs(5));
        for (req, want) in [
            (http.get("not a url secret-1"), "bad URL"),
            (http.get("ftp://host/secret-1"), "scheme"),
            (
                http.get("https://h/").header("x-key", "secret-1\n"),
                "invalid value for header x-key",
            ),
            (
                http.get("https://h/").header("bad header", "secret-1"),
                "header name",
            ),
        ] {
            let e = req.send().await.unwrap_err();
            let shown = format!("{e} {e:?}");
            assert!(matches!(e, HttpError::InvalidRequest(_)), "{shown}");
            assert!(shown.contains(want), "{shown}");
            assert!(!shown.contains("secret-1"), "{shown}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn debug_output_shows_no_url_query_or_header_value() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let client = Stalling {
            answer: true,
            body_dropped: Default::default(),
            seen: seen.clone(),
        };
        let (http, _guard) = Http::for_turn(
            Some(Arc::new(client)),
            Arc::new(TestClock(tokio::time::Instant::now())),
            Duration::from_secs(5),
        );
        let builder = http
            .post("https://api.example.com/v1/secret-path?key=secret-q")
            .bearer_auth("secret-token")
            .header("x-api-key", "secret-h");
        let built = format!("{builder:?} {http:?}");
        let response = builder.send().await.unwrap();
        let request = seen.lock().unwrap().clone().unwrap();
        let head = format!("{response:?}");
        let shown = format!("{built} {request} {head} {:?}", response.into_body());
        assert!(
            shown.contains("POST") && shown.contains("authorization"),
            "{shown}"
        );
        for secret in ["secret", "example.com"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
