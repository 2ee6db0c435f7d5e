//! HTTP/1.1 written by hand on a TCP socket, for what a well-behaved client cannot do: stop
//! reading, send half a request, or send a head without its body.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// `host:port` and path prefix of `base_url` (`http://127.0.0.1:PORT[/prefix]`).
///
/// # Panics
/// If `base_url` is not a plain `http://` URL.
pub fn split_base(base_url: &str) -> (String, String) {
    let rest = base_url
        .strip_prefix("http://")
        .expect("an http:// base URL");
    match rest.split_once('/') {
        Some((host, prefix)) => (
            host.to_owned(),
            format!("/{}", prefix.trim_end_matches('/')),
        ),
        None => (rest.to_owned(), String::new()),
    }
}

/// A connection to `base_url`'s host. With `recv_buffer`, the socket's receive buffer is
/// set that small before connecting, so a client that stops reading stalls the sender soon.
///
/// # Panics
/// If the connection cannot be made.
pub async fn connect(base_url: &str, recv_buffer: Option<u32>) -> TcpStream {
    let (host, _) = split_base(base_url);
    let addr = tokio::net::lookup_host(&host)
        .await
        .expect("resolvable host")
        .next()
        .expect("an address");
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .expect("socket");
    if let Some(n) = recv_buffer {
        socket.set_recv_buffer_size(n).expect("SO_RCVBUF");
    }
    socket.connect(addr).await.expect("connect")
}

/// A request head for `{prefix}{route}` on `base_url`, with `headers`, declaring
/// `content_length` bytes of body.
pub fn head(
    method: &str,
    base_url: &str,
    route: &str,
    headers: &[(String, String)],
    content_length: usize,
) -> String {
    let (host, prefix) = split_base(base_url);
    let mut h = format!(
        "{method} {prefix}{route} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {content_length}\r\n"
    );
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    h
}

/// Reads until the peer closes or `within` passes: what arrived, and whether it closed.
pub async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    let closed = tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

/// Writes `bytes`; `false` if the peer has closed the connection.
pub async fn write(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    stream.write_all(bytes).await.is_ok()
}
