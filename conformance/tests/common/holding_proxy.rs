//! A real HTTP/1.1 proxy on 127.0.0.1 that holds small chunks of a response body the way some
//! paths do (function URLs are reported to): what it reads from the agent is held until it
//! adds up to `threshold` bytes or the agent writes again, then sent on in one write.
//!
//! One request per client connection: the request goes to a fresh upstream connection with
//! `Connection: close`, the response head is passed on at once (with `Connection: close`), and
//! the body (whatever its framing) is held and released by the rule above until the agent
//! closes. A `threshold` of 0 forwards every read at once.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running proxy.
pub struct HoldingProxy {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl HoldingProxy {
    pub async fn start(upstream: SocketAddr, threshold: usize) -> HoldingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = relay(client, upstream, threshold).await;
                });
            }
        });
        HoldingProxy { addr, task }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `head` (through its blank line) with its `Connection` header replaced by `close`.
fn closing(head: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut out = String::new();
    for line in text.trim_end_matches("\r\n").split("\r\n") {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    out.into_bytes()
}

/// Reads from `from` until a blank line: the head, and what came after it.
async fn read_head(from: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        let n = from.read(&mut chunk).await?;
        if n == 0 || buf.len() > 64 * 1024 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn relay(
    mut client: TcpStream,
    upstream: SocketAddr,
    threshold: usize,
) -> std::io::Result<()> {
    let (head, mut body) = read_head(&mut client).await?;
    let length = String::from_utf8_lossy(&head)
        .split("\r\n")
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut chunk = [0u8; 8192];
    while body.len() < length {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let mut agent = TcpStream::connect(upstream).await?;
    agent.write_all(&closing(&head)).await?;
    agent.write_all(&body).await?;

    let (head, first) = read_head(&mut agent).await?;
    client.write_all(&closing(&head)).await?;
    let mut held: Vec<u8> = Vec::new();
    let pass = |read: &[u8], held: &mut Vec<u8>| -> Option<Vec<u8>> {
        // Released by the next write, or once the held bytes reach the threshold.
        let released = !held.is_empty() || read.len() >= threshold;
        held.extend_from_slice(read);
        released.then(|| std::mem::take(held))
    };
    if !first.is_empty()
        && let Some(out) = pass(&first, &mut held)
    {
        client.write_all(&out).await?;
    }
    loop {
        let n = agent.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        if let Some(out) = pass(&chunk[..n], &mut held) {
            client.write_all(&out).await?;
        }
    }
    client.write_all(&held).await?;
    client.shutdown().await
}
