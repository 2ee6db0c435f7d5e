//! The TCP side of `runway serve`: the listening socket, the connection loop and its bounds.
//!
//! axum's `serve` sets no timer, so hyper's header-read timeout never fires and nothing
//! bounds connections: slowloris holds sockets forever and idle connections exhaust file
//! descriptors. Here hyper's HTTP/1 connection is driven directly:
//! - a listen backlog of [`LISTEN_BACKLOG`] (tokio's default of 1,024 dropped SYNs in a
//!   1,000-connection burst; the kernel caps it at `net.core.somaxconn`);
//! - hyper's header-read timeout, with a timer: a client gets [`HEADER_READ_TIMEOUT`] to send
//!   a request's head, both on a new connection and between keep-alive requests;
//! - the file-descriptor limit raised to its hard limit, and at most that minus
//!   [`FD_RESERVE`] connections. At the bound, the oldest connection with no request in
//!   flight is closed to make room (as nginx reuses idle keep-alive connections), so idle
//!   or half-sent connections can never lock out `/health` or a turn;
//! - at most [`MAX_IN_FLIGHT_TURNS`] requests other than `GET`/`HEAD` in flight: beyond, 503
//!   at once (a turn holds its recording in memory until it commits);
//! - a write that makes no progress for [`WRITE_STALL_TIMEOUT`] closes the connection
//!   (see [`crate::write_stall`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Notify;
use tower::ServiceExt;

use crate::write_stall::WriteStallTimeout;

/// Pending connections the kernel queues before `accept` (capped by `net.core.somaxconn`).
pub const LISTEN_BACKLOG: u32 = 4096;
/// Time a client has to send a request's head, on a new or an idle keep-alive connection.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// File descriptors kept free for everything but client connections (the database, logs,
/// the listener itself, accepts racing an eviction).
pub const FD_RESERVE: u64 = 512;
/// Turns (and other non-`GET` requests) in flight at once; more are answered 503.
pub const MAX_IN_FLIGHT_TURNS: usize = 2048;
/// A connection whose writes make no progress for this long is closed (a client that does
/// not read). Turns end at their own deadline; this frees the socket after that.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Raises this process's `RLIMIT_NOFILE` soft limit to the hard limit; returns the soft
/// limit in force afterwards.
pub fn raise_fd_limit() -> u64 {
    let Ok((soft, hard)) = rlimit::getrlimit(rlimit::Resource::NOFILE) else {
        return 1024;
    };
    if soft >= hard {
        return soft;
    }
    match rlimit::setrlimit(rlimit::Resource::NOFILE, hard, hard) {
        Ok(()) => hard,
        Err(e) => {
            tracing::warn!(soft, hard, error = %e, "could not raise the open-file limit");
            soft
        }
    }
}

/// Connections allowed when `fd_limit` descriptors may be open.
pub fn max_connections(fd_limit: u64) -> usize {
    usize::try_from(fd_limit.saturating_sub(FD_RESERVE).max(16)).unwrap_or(usize::MAX)
}

/// Binds `addr` with a listen backlog of [`LISTEN_BACKLOG`].
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for open connections
/// to finish (idle ones are closed at once).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    max_connections: usize,
    shutdown: impl Future<Output = ()>,
) {
    let registry = Arc::new(Registry::new(max_connections));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of descriptors (or a connection reset before accept): free an idle
                    // connection if there is one, and do not spin.
                    tracing::warn!(error = %e, "accept failed");
                    registry.evict_idle();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(conn) = registry.register() else {
            // Every connection has a request in flight: refuse this one.
            drop(tcp);
            continue;
        };
        // Frames are small writes: without TCP_NODELAY, Nagle's algorithm holds each one
        // until the previous is acknowledged (up to 40 ms with delayed ACKs).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "could not set TCP_NODELAY");
        }
        let io = TokioIo::new(WriteStallTimeout::new(tcp, WRITE_STALL_TIMEOUT));
        let service = {
            let (app, conn, in_flight) = (app.clone(), Arc::clone(&conn), Arc::clone(&in_flight));
            hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                call(
                    app.clone(),
                    Arc::clone(&conn),
                    Arc::clone(&in_flight),
                    req.map(Body::new),
                )
            })
        };
        let served = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            tokio::select! {
                _ = served => {},
                () = conn.evicted.notified() => {},
            }
            drop(conn);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// One request: counted on its connection (and, unless `GET`/`HEAD`, against
/// [`MAX_IN_FLIGHT_TURNS`]) until its response body has been sent or dropped.
async fn call(
    app: Router,
    conn: Arc<ConnectionTicket>,
    in_flight: Arc<AtomicUsize>,
    req: axum::extract::Request,
) -> Result<Response, std::convert::Infallible> {
    let counts = !matches!(*req.method(), http::Method::GET | http::Method::HEAD);
    if counts && in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT_TURNS {
        in_flight.fetch_sub(1, Ordering::AcqRel);
        tracing::warn!(
            limit = MAX_IN_FLIGHT_TURNS,
            "request refused: too many turns in flight"
        );
        let mut r = runway_core::adapter::json_error(503, "the agent is busy: try again shortly")
            .map(Body::from)
            .into_response();
        r.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        return Ok(r);
    }
    let guard = RequestGuard {
        conn,
        in_flight: counts.then_some(in_flight),
    };
    guard.conn.requests.fetch_add(1, Ordering::AcqRel);
    let response = app.oneshot(req).await?;
    // The guard lives as long as the body: a streamed turn counts until it has been sent.
    Ok(response.map(|body| {
        Body::new(GuardedBody {
            body,
            _guard: guard,
        })
    }))
}

/// A response body that keeps its request counted until it is finished or dropped (same
/// frames and size hint, so a full response keeps its `Content-Length`).
struct GuardedBody {
    body: Body,
    _guard: RequestGuard,
}

impl http_body::Body for GuardedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

struct RequestGuard {
    conn: Arc<ConnectionTicket>,
    in_flight: Option<Arc<AtomicUsize>>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.conn.requests.fetch_sub(1, Ordering::AcqRel);
        if let Some(n) = &self.in_flight {
            n.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// One accepted connection, as the registry sees it.
struct Connection {
    /// Requests received on it whose response is not finished.
    requests: AtomicUsize,
    /// Notified when the registry closes it to make room.
    evicted: Notify,
}

/// A connection's place in the registry, held by its task and its requests; the last one
/// dropped takes it out.
struct ConnectionTicket {
    id: u64,
    registry: Arc<Registry>,
    state: Arc<Connection>,
}

impl std::ops::Deref for ConnectionTicket {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.state
    }
}

impl Drop for ConnectionTicket {
    fn drop(&mut self) {
        self.registry.lock().live.remove(&self.id);
    }
}

/// The open connections, oldest first.
struct Registry {
    max: usize,
    state: Mutex<RegistryState>,
}

struct RegistryState {
    next_id: u64,
    live: BTreeMap<u64, Arc<Connection>>,
}

impl Registry {
    fn new(max: usize) -> Self {
        Self {
            max,
            state: Mutex::new(RegistryState {
                next_id: 0,
                live: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new connection, closing the oldest idle one if at the bound; `None` when
    /// at the bound with every connection busy.
    fn register(self: &Arc<Self>) -> Option<Arc<ConnectionTicket>> {
        let mut state = self.lock();
        if state.live.len() >= self.max && !Self::evict_oldest_idle(&mut state) {
            tracing::warn!(
                limit = self.max,
                "connection refused: every connection has a request in flight"
            );
            return None;
        }
        state.next_id += 1;
        let id = state.next_id;
        let conn = Arc::new(Connection {
            requests: AtomicUsize::new(0),
            evicted: Notify::new(),
        });
        state.live.insert(id, Arc::clone(&conn));
        Some(Arc::new(ConnectionTicket {
            id,
            registry: Arc::clone(self),
            state: conn,
        }))
    }

    fn evict_idle(&self) {
        Self::evict_oldest_idle(&mut self.lock());
    }

    fn evict_oldest_idle(state: &mut RegistryState) -> bool {
        let victim = state
            .live
            .iter()
            .find(|(_, conn)| conn.requests.load(Ordering::Acquire) == 0)
            .map(|(id, _)| *id);
        let Some(conn) = victim.and_then(|id| state.live.remove(&id)) else {
            return false;
        };
        // notify_one keeps a permit if the connection's task is not waiting yet.
        conn.evicted.notify_one();
        tracing::debug!("idle connection closed to make room");
        true
    }
}
