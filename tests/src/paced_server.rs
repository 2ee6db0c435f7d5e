//! A loopback HTTP/1.1 server for agents' HTTP clients: it answers every request with a
//! chunked body sent one piece at a time, each piece only when the test releases it, and
//! reports what it received, what it sent and when the client hung up.
//!
//! Because the next piece waits for the test, a test that waits for piece N to reach the user
//! before releasing piece N+1 fails (times out) unless the body was read incrementally all the
//! way through.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What the server saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PacedEvent {
    /// A request head arrived (request line and headers, as text).
    Request(String),
    /// Piece number `n` (from 0) was written and flushed.
    Sent(usize),
    /// The body is complete (terminating chunk written).
    Finished,
    /// The client closed the connection after `pieces_sent` pieces, before the body ended.
    Closed {
        /// Pieces written before the close.
        pieces_sent: usize,
    },
}

/// The server; dropping it stops accepting.
pub struct PacedServer {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    release: mpsc::UnboundedSender<()>,
    events: mpsc::UnboundedReceiver<PacedEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl PacedServer {
    /// Listens on a free loopback port; each connection gets `pieces` as a chunked body.
    pub async fn start(pieces: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let base_url = format!("http://{}", listener.local_addr().expect("local addr"));
        let (release, mut released) = mpsc::unbounded_channel();
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            // One connection at a time: the tests make one request each.
            while let Ok((conn, _)) = listener.accept().await {
                serve(conn, &pieces, &mut released, &tx).await;
            }
        });
        Self {
            base_url,
            release,
            events,
            task,
        }
    }

    /// Lets the server send its next piece.
    pub fn release(&self) {
        let _ = self.release.send(());
    }

    /// The next event, or `None` if none comes within `within`.
    pub async fn next_event(&mut self, within: Duration) -> Option<PacedEvent> {
        tokio::time::timeout(within, self.events.recv())
            .await
            .ok()
            .flatten()
    }

    /// Waits for the client to hang up; `Some(pieces_sent)` if it did within `within`.
    pub async fn closed_within(&mut self, within: Duration) -> Option<usize> {
        let until = tokio::time::Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            match self.next_event(left).await? {
                PacedEvent::Closed { pieces_sent } => return Some(pieces_sent),
                _ => continue,
            }
        }
    }
}

impl Drop for PacedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut conn: TcpStream,
    pieces: &[String],
    released: &mut mpsc::UnboundedReceiver<()>,
    tx: &mpsc::UnboundedSender<PacedEvent>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = tx.send(PacedEvent::Closed { pieces_sent: 0 });
                return;
            }
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let _ = tx.send(PacedEvent::Request(
        String::from_utf8_lossy(&head).into_owned(),
    ));
    let response_head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n\
                         transfer-encoding: chunked\r\ncache-control: no-store\r\nconnection: close\r\n\r\n";
    if conn.write_all(response_head.as_bytes()).await.is_err() {
        let _ = tx.send(PacedEvent::Closed { pieces_sent: 0 });
        return;
    }
    let mut sent = 0;
    while sent < pieces.len() {
        // Wait for the test to release the next piece, watching for a hang-up meanwhile.
        tokio::select! {
            r = released.recv() => {
                if r.is_none() {
                    return;
                }
                let piece = &pieces[sent];
                let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
                if conn.write_all(chunk.as_bytes()).await.is_err() || conn.flush().await.is_err() {
                    let _ = tx.send(PacedEvent::Closed { pieces_sent: sent });
                    return;
                }
                let _ = tx.send(PacedEvent::Sent(sent));
                sent += 1;
            }
            r = conn.read(&mut buf) => {
                if matches!(r, Ok(0) | Err(_)) {
                    let _ = tx.send(PacedEvent::Closed { pieces_sent: sent });
                    return;
                }
            }
        }
    }
    // `connection: close`: the body ends and the connection with it, so no client reuses it.
    if conn.write_all(b"0\r\n\r\n").await.is_ok() {
        let _ = tx.send(PacedEvent::Finished);
    }
}
