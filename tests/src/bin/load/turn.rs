//! One turn over hyper's HTTP/1 client: connect (or reuse), send, time the first frame and
//! the end of the stream, and classify what went wrong.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::report::Sample;

/// How turns reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConnectionMode {
    /// A new TCP connection per turn, closed by the server after the answer.
    New,
    /// One connection per worker, reused while it stays open.
    KeepAlive,
}

impl ConnectionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::KeepAlive => "keep-alive",
        }
    }
}

/// Why a turn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// TCP connect failed (refused, reset, out of ports or descriptors).
    Connect,
    /// The HTTP handshake or the request could not be sent, or no response head came.
    Send,
    /// A status other than 200.
    Status(u16),
    /// The body broke off with an error (a reset mid-stream).
    Body,
    /// The stream ended with `RUN_ERROR`.
    RunError,
    /// The stream ended cleanly without a final frame.
    Truncated,
    /// The turn took longer than the tool's per-turn bound.
    Timeout,
}

impl ErrorKind {
    pub fn label(self) -> String {
        match self {
            Self::Connect => "connect".into(),
            Self::Send => "send".into(),
            Self::Status(s) => format!("status_{s}"),
            Self::Body => "body".into(),
            Self::RunError => "run_error".into(),
            Self::Truncated => "truncated".into(),
            Self::Timeout => "timeout".into(),
        }
    }
}

/// Where and what to send.
pub struct Target {
    addr: SocketAddr,
    authority: String,
    runs_path: String,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    input: String,
}

/// Bytes of the stream's end kept to find its last frame.
const TAIL: usize = 512;

impl Target {
    /// A loopback `base_url`, `Name: value` headers and the turn's input.
    pub fn parse(base_url: &str, headers: &[String], input: &str) -> Result<Self, String> {
        let uri: http::Uri = base_url
            .parse()
            .map_err(|e| format!("bad base URL {base_url:?}: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err("only http:// base URLs on loopback".into());
        }
        let host = uri.host().unwrap_or_default();
        let port = uri.port_u16().unwrap_or(80);
        let addr = crate::loopback_addr(host, port)
            .ok_or_else(|| format!("load only targets loopback addresses, not {host:?}"))?;
        let headers = headers
            .iter()
            .map(|h| {
                let (k, v) = h
                    .split_once(':')
                    .ok_or_else(|| format!("a header is 'Name: value', not {h:?}"))?;
                Ok((
                    http::HeaderName::try_from(k.trim()).map_err(|e| e.to_string())?,
                    http::HeaderValue::try_from(v.trim()).map_err(|e| e.to_string())?,
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(Self {
            addr,
            authority: uri.authority().map(|a| a.to_string()).unwrap_or_default(),
            runs_path: format!("{}/runs", uri.path().trim_end_matches('/')),
            headers,
            input: input.to_owned(),
        })
    }

    /// Runs one turn on `thread_id`, reusing `conn` in keep-alive mode.
    pub async fn turn(
        &self,
        conn: &mut Option<SendRequest<Full<Bytes>>>,
        mode: ConnectionMode,
        run_id: &str,
        thread_id: &str,
    ) -> Sample {
        let t0 = Instant::now();
        let reused = match conn.take() {
            Some(mut s) => s.ready().await.is_ok().then_some(s),
            None => None,
        };
        let mut sender = match reused {
            Some(s) => s,
            None => match self.connect().await {
                Ok(s) => s,
                Err(kind) => return Sample::failed(kind),
            },
        };
        let connected = t0.elapsed();
        let body = runway_e2e::client::run_body(run_id, thread_id, &self.input).to_string();
        let mut req = http::Request::post(&self.runs_path)
            .header(http::header::HOST, &self.authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "text/event-stream");
        if mode == ConnectionMode::New {
            req = req.header(http::header::CONNECTION, "close");
        }
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        let response = match sender.send_request(req).await {
            Ok(r) => r,
            Err(_) => return Sample::failed(ErrorKind::Send),
        };
        if response.status() != http::StatusCode::OK {
            return Sample::failed(ErrorKind::Status(response.status().as_u16()));
        }
        let mut body = response.into_body();
        let mut first_frame = None;
        let mut tail: Vec<u8> = Vec::with_capacity(2 * TAIL);
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                return Sample::failed(ErrorKind::Body);
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if first_frame.is_none() && !data.is_empty() {
                first_frame = Some(t0.elapsed());
            }
            tail.extend_from_slice(&data);
            if tail.len() > 2 * TAIL {
                tail.drain(..tail.len() - TAIL);
            }
        }
        let whole = t0.elapsed();
        if mode == ConnectionMode::KeepAlive {
            *conn = Some(sender);
        }
        match last_frame_type(&tail) {
            Some("RUN_FINISHED") => Sample::ok(connected, first_frame.unwrap_or(whole), whole),
            Some("RUN_ERROR") => Sample::failed(ErrorKind::RunError),
            _ => Sample::failed(ErrorKind::Truncated),
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ErrorKind> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(|_| ErrorKind::Connect)?;
        tcp.set_nodelay(true).map_err(|_| ErrorKind::Connect)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|_| ErrorKind::Send)?;
        tokio::spawn(connection);
        Ok(sender)
    }
}

/// The `type` of the last `data:` frame in the stream's `tail`.
fn last_frame_type(tail: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(tail).ok().or_else(|| {
        // The cut may split a UTF-8 sequence: skip to the first whole character.
        let start = tail.iter().position(|b| (*b as i8) >= -0x40)?;
        std::str::from_utf8(&tail[start..]).ok()
    })?;
    let last = text.trim_end().rsplit("\n\n").next()?;
    let data = last.lines().find_map(|l| l.strip_prefix("data:"))?;
    let at = data.find("\"type\":\"")? + "\"type\":\"".len();
    let rest = &data[at..];
    Some(&rest[..rest.find('"')?])
}

#[cfg(test)]
mod tests {
    use super::last_frame_type;

    #[test]
    fn finds_the_last_frames_type() {
        let s = b"data: {\"type\":\"STEP_STARTED\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\"}\n\n";
        assert_eq!(last_frame_type(s), Some("RUN_FINISHED"));
        let s = b"data: {\"type\":\"RUN_FINISHED\"}\n\ndata: {\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n\n";
        assert_eq!(last_frame_type(s), Some("RUN_ERROR"));
        assert_eq!(last_frame_type(b": heartbeat\n\n"), None);
        assert_eq!(last_frame_type(b""), None);
    }
}
