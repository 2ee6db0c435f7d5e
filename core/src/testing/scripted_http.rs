//! [`ScriptedHttp`]: an [`HttpClient`] that answers from a script, on the virtual clock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;

use crate::http_client::{HttpBody, HttpClient, HttpError, HttpRequest, HttpResponse};
use crate::platform::maybe_send::BoxFuture;
use crate::testing::clock::VirtualRuntime;

/// An [`HttpClient`] for tests: each request is answered by the first scripted route with its
/// method and URL, and recorded ([`ScriptedHttp::requests`]). A route's responses are used in
/// order, the last one for every request after. A request no route matches fails with
/// [`HttpError::Connect`], as an unreachable host would.
///
/// Waits ([`ScriptedResponse::delay`], [`ScriptedResponse::wait`]) run on a
/// [`VirtualRuntime`]: the one of the [`TestTurn`](super::TestTurn) or
/// [`TestRunway`](super::TestRunway) it is given to, or [`ScriptedHttp::on_clock`]'s.
///
/// Clones share the script and the record.
///
/// # Example
///
/// ```
/// use runway_core::testing::{ScriptedHttp, ScriptedResponse, TestTurn};
/// use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
///
/// struct Weather;
/// impl Agent for Weather {
///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
///         let now: serde_json::Value = turn
///             .http()
///             .get("https://weather.example.com/now?city=Hanoi")
///             .send()
///             .await?
///             .json()
///             .await?;
///         out.text(format!("It is {} in Hanoi.", now["summary"].as_str().unwrap_or("?")));
///         Ok(Outcome::Done)
///     }
/// }
///
/// # runway_core::testing::VirtualRuntime::new().block_on(async {
/// let http = ScriptedHttp::new().get(
///     "https://weather.example.com/now?city=Hanoi",
///     ScriptedResponse::json(&serde_json::json!({"summary": "sunny"})),
/// );
/// let frames = TestTurn::new("weather?").http_client(http.clone()).run(&Weather).await;
/// assert_eq!(frames.text(), "It is sunny in Hanoi.");
/// assert_eq!(http.requests().len(), 1);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct ScriptedHttp {
    script: Arc<Script>,
}

#[derive(Default)]
struct Script {
    routes: Mutex<Vec<Route>>,
    requests: Mutex<Vec<HttpRequest>>,
    clock: Mutex<Option<VirtualRuntime>>,
}

struct Route {
    method: http::Method,
    url: url::Url,
    responses: VecDeque<ScriptedResponse>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for ScriptedHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedHttp")
            .field("routes", &lock(&self.script.routes).len())
            .field("requests", &lock(&self.script.requests).len())
            .finish()
    }
}

impl ScriptedHttp {
    /// An empty script: every request fails to connect.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `method url` with `response` (after the responses already scripted for it).
    ///
    /// # Panics
    /// If `url` is not an absolute URL: a mistake in the test.
    #[must_use]
    pub fn on(self, method: http::Method, url: &str, response: ScriptedResponse) -> Self {
        let url = url::Url::parse(url).unwrap_or_else(|e| panic!("scripted URL {url:?}: {e}"));
        {
            let mut routes = lock(&self.script.routes);
            match routes
                .iter_mut()
                .find(|r| r.method == method && r.url == url)
            {
                Some(r) => r.responses.push_back(response),
                None => routes.push(Route {
                    method,
                    url,
                    responses: VecDeque::from([response]),
                }),
            }
        }
        self
    }

    /// [`ScriptedHttp::on`] for `GET`.
    #[must_use]
    pub fn get(self, url: &str, response: ScriptedResponse) -> Self {
        self.on(http::Method::GET, url, response)
    }

    /// [`ScriptedHttp::on`] for `POST`.
    #[must_use]
    pub fn post(self, url: &str, response: ScriptedResponse) -> Self {
        self.on(http::Method::POST, url, response)
    }

    /// Runs the script's waits on `rt`'s clock (a [`TestTurn`](super::TestTurn) or
    /// [`TestRunway`](super::TestRunway) given this script does it itself).
    #[must_use]
    pub fn on_clock(self, rt: &VirtualRuntime) -> Self {
        *lock(&self.script.clock) = Some(rt.clone());
        self
    }

    /// Every request sent so far, in order (answered or not).
    pub fn requests(&self) -> Vec<HttpRequest> {
        lock(&self.script.requests).clone()
    }

    fn answer(&self, request: &HttpRequest) -> Option<ScriptedResponse> {
        let mut routes = lock(&self.script.routes);
        let route = routes
            .iter_mut()
            .find(|r| r.method == request.method && r.url == request.url)?;
        if route.responses.len() > 1 {
            route.responses.pop_front()
        } else {
            route.responses.front().cloned()
        }
    }
}

impl HttpClient for ScriptedHttp {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, HttpError>> {
        let answer = self.answer(&request);
        lock(&self.script.requests).push(request);
        let clock = lock(&self.script.clock).clone();
        Box::pin(async move {
            let Some(answer) = answer else {
                return Err(HttpError::Connect(
                    "no scripted response for this request".into(),
                ));
            };
            answer.respond(clock).await
        })
    }
}

/// One scripted answer: a status, headers, and a body in chunks, with waits on the virtual
/// clock before the head and between chunks.
#[derive(Debug, Clone)]
pub struct ScriptedResponse {
    outcome: Result<(http::StatusCode, http::HeaderMap), HttpError>,
    delay: Duration,
    body: Vec<Step>,
}

#[derive(Debug, Clone)]
enum Step {
    Wait(Duration),
    Chunk(Bytes),
    Fail(HttpError),
}

impl ScriptedResponse {
    /// `status` with no headers and an empty body.
    ///
    /// # Panics
    /// If `status` is not a valid status code (100 to 999).
    pub fn new(status: u16) -> Self {
        let status = http::StatusCode::from_u16(status).expect("a valid status code");
        Self {
            outcome: Ok((status, http::HeaderMap::new())),
            delay: Duration::ZERO,
            body: Vec::new(),
        }
    }

    /// `200` with `text` as a `text/plain` body.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(200)
            .header("content-type", "text/plain; charset=utf-8")
            .chunk(text.into())
    }

    /// `200` with `value` as a JSON body.
    pub fn json(value: &serde_json::Value) -> Self {
        Self::new(200)
            .header("content-type", "application/json")
            .chunk(value.to_string())
    }

    /// No response at all: the request fails with `error` (after [`ScriptedResponse::delay`]).
    pub fn fail(error: HttpError) -> Self {
        Self {
            outcome: Err(error),
            delay: Duration::ZERO,
            body: Vec::new(),
        }
    }

    /// Adds a header.
    ///
    /// # Panics
    /// If the name or value is not valid in HTTP: a mistake in the test.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Ok((_, headers)) = &mut self.outcome {
            headers.append(
                http::HeaderName::try_from(name).expect("a valid header name"),
                http::HeaderValue::try_from(value).expect("a valid header value"),
            );
        }
        self
    }

    /// The head arrives `delay` after the request is sent.
    #[must_use]
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Appends a chunk to the body.
    #[must_use]
    pub fn chunk(mut self, bytes: impl Into<Bytes>) -> Self {
        self.body.push(Step::Chunk(bytes.into()));
        self
    }

    /// The next chunk (or the body's end) comes `wait` later.
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.body.push(Step::Wait(wait));
        self
    }

    /// The body breaks here with `error` (a connection cut mid-stream, say).
    #[must_use]
    pub fn then_fail(mut self, error: HttpError) -> Self {
        self.body.push(Step::Fail(error));
        self
    }

    async fn respond(self, clock: Option<VirtualRuntime>) -> Result<HttpResponse, HttpError> {
        let sleep = move |d: Duration| {
            let clock = clock.clone();
            async move {
                if d.is_zero() {
                    return;
                }
                let clock = clock.expect(
                    "a scripted wait needs a clock: give the script to TestTurn::http_client or \
                     TestRunway::with_http_client, or call ScriptedHttp::on_clock",
                );
                clock.sleep(d).await;
            }
        };
        sleep(self.delay).await;
        let (status, headers) = self.outcome?;
        let body = futures::stream::unfold(
            (self.body.into_iter(), sleep),
            |(mut steps, sleep)| async move {
                loop {
                    match steps.next()? {
                        Step::Wait(d) => sleep(d).await,
                        Step::Chunk(b) => return Some((Ok(b), (steps, sleep))),
                        Step::Fail(e) => return Some((Err(e), (steps, sleep))),
                    }
                }
            },
        );
        Ok(HttpResponse::new(
            status,
            headers,
            HttpBody::from_stream(body),
        ))
    }
}
