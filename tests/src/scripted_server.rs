//! A loopback HTTP/1.1 server that answers from a script and records every request: an
//! OpenAI-compatible chat-completions endpoint replaying chunk sequences (with pauses and cuts),
//! or a business API a model's tool calls.
//!
//! Responses are chunked, one HTTP chunk per [`Piece::Data`], so a client sees them arrive
//! piece by piece; [`Piece::Cut`] closes the connection mid-body, as a crashed upstream does.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Method.
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// When it arrived.
    pub at: Instant,
}

impl Recorded {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` if it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Part of a response body.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Bytes sent as one HTTP chunk and flushed.
    Data(String),
    /// Raw bytes (a binary file) sent as one HTTP chunk and flushed.
    Bytes(Vec<u8>),
    /// Wait before the next piece.
    Pause(Duration),
    /// Close the connection now, without finishing the body.
    Cut,
    /// Wait this long before the status line is sent (wherever it stands in the list): a
    /// server slow to answer at all, not slow to finish its body.
    HeadPause(Duration),
}

/// A scripted response.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body, piece by piece.
    pub pieces: Vec<Piece>,
}

impl Reply {
    /// A `200` JSON body.
    pub fn json(value: &Value) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            pieces: vec![Piece::Data(value.to_string())],
        }
    }

    /// An error status with a JSON body.
    pub fn status(status: u16, headers: &[(&str, &str)], body: &Value) -> Self {
        Self {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .chain([("content-type".to_owned(), "application/json".to_owned())])
                .collect(),
            pieces: vec![Piece::Data(body.to_string())],
        }
    }

    /// A chat-completions event stream: each chunk as a `data:` event, then `[DONE]`.
    pub fn sse(chunks: &[Value]) -> Self {
        let mut pieces: Vec<Piece> = chunks
            .iter()
            .map(|c| Piece::Data(format!("data: {c}\n\n")))
            .collect();
        pieces.push(Piece::Data("data: [DONE]\n\n".into()));
        Self::stream(pieces)
    }

    /// An event stream from raw pieces.
    pub fn stream(pieces: Vec<Piece>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces,
        }
    }
}

/// Chat-completions chunks with the shapes OpenAI-compatible servers send.
pub mod chunk {
    use super::*;

    fn delta(delta: Value, finish: Option<&str>) -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
               "model": "test-model",
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    }

    /// The role chunk opening an answer.
    pub fn role() -> Value {
        delta(json!({"role": "assistant", "content": ""}), None)
    }

    /// A content delta.
    pub fn text(s: &str) -> Value {
        delta(json!({"content": s}), None)
    }

    /// A `reasoning_content` delta (DeepSeek, vLLM).
    pub fn reasoning_content(s: &str) -> Value {
        delta(json!({"reasoning_content": s}), None)
    }

    /// A `reasoning` delta (OpenRouter, Ollama).
    pub fn reasoning(s: &str) -> Value {
        delta(json!({"reasoning": s}), None)
    }

    /// The first part of tool call `index`.
    pub fn tool_start(index: u32, id: &str, name: &str, args: &str) -> Value {
        delta(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": args}}]}),
            None,
        )
    }

    /// More arguments of tool call `index`.
    pub fn tool_args(index: u32, args: &str) -> Value {
        delta(
            json!({"tool_calls": [{"index": index, "function": {"arguments": args}}]}),
            None,
        )
    }

    /// The finish chunk.
    pub fn finish(reason: &str) -> Value {
        delta(json!({}), Some(reason))
    }

    /// The usage chunk (`stream_options.include_usage`).
    pub fn usage() -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}})
    }
}

/// A 1×1 PNG, a file to attach.
pub const PIXEL_PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc`\0\0\0\x02\0\x01T\xa2O]\0\0\0\0IEND\xaeB`\x82";

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// The server; dropping it stops accepting.
pub struct ScriptedServer {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedServer {
    /// Answers every request with `handler`'s reply.
    pub async fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let base_url = format!("http://{}", listener.local_addr().expect("local addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let handler = handler.clone();
                let seen = seen.clone();
                tokio::spawn(async move { serve(conn, &*handler, &seen).await });
            }
        });
        Self {
            base_url,
            requests,
            task,
        }
    }

    /// Answers requests with `replies` in order; after the last, `500`.
    pub async fn script(replies: Vec<Reply>) -> Self {
        let queue = Mutex::new(VecDeque::from(replies));
        Self::start(move |_| {
            queue.lock().unwrap().pop_front().unwrap_or_else(|| {
                Reply::status(500, &[], &json!({"error": {"message": "script exhausted"}}))
            })
        })
        .await
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of the chat-completions calls received so far (as a scripted model: `POST
    /// /v1/chat/completions`), in order.
    pub fn chat_completions(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .filter(|r| r.method == "POST" && r.target == "/v1/chat/completions")
            .map(Recorded::json)
            .collect()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut conn: TcpStream, handler: &Handler, seen: &Mutex<Vec<Recorded>>) {
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match conn.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let target = first.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match conn.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&tmp[..n]),
        }
    }
    let request = Recorded {
        method,
        target,
        headers,
        body,
        at: Instant::now(),
    };
    let reply = handler(&request);
    seen.lock().unwrap().push(request);
    for piece in &reply.pieces {
        if let Piece::HeadPause(d) = piece {
            tokio::time::sleep(*d).await;
        }
    }
    let mut out = format!(
        "HTTP/1.1 {} Scripted\r\ntransfer-encoding: chunked\r\nconnection: close\r\n",
        reply.status
    );
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    if conn.write_all(out.as_bytes()).await.is_err() {
        return;
    }
    for piece in reply.pieces {
        match piece {
            Piece::Data(d) => {
                let framed = format!("{:x}\r\n{d}\r\n", d.len());
                if conn.write_all(framed.as_bytes()).await.is_err() {
                    return;
                }
                let _ = conn.flush().await;
            }
            Piece::Bytes(b) => {
                let mut framed = format!("{:x}\r\n", b.len()).into_bytes();
                framed.extend_from_slice(&b);
                framed.extend_from_slice(b"\r\n");
                if conn.write_all(&framed).await.is_err() {
                    return;
                }
                let _ = conn.flush().await;
            }
            Piece::Pause(d) => tokio::time::sleep(d).await,
            Piece::HeadPause(_) => {}
            Piece::Cut => return,
        }
    }
    let _ = conn.write_all(b"0\r\n\r\n").await;
    let _ = conn.shutdown().await;
}
