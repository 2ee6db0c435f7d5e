//! The real `bootstrap` against a stand-in for the Lambda Runtime API that breaks the
//! connection carrying an invocation's streamed response, as cargo-lambda's emulator does when
//! the client hangs up mid-stream. The invocation's answer is lost (its client is gone), but
//! the process must go on to the next invocation: before, lambda_runtime's loop returned the
//! transport error and the process exited, taking every later turn of that instance with it.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one request head; `None` once the peer has closed.
async fn read_head(conn: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// A function URL event (API Gateway v2 shape) for `GET /health`.
fn health_event() -> String {
    serde_json::json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/health",
        "rawQueryString": "",
        "headers": {"host": "abc.lambda-url.us-east-1.on.aws"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc",
            "domainName": "abc.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abc",
            "http": {"method": "GET", "path": "/health", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test"},
            "requestId": "r1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Dec/2026:00:00:00 +0000",
            "timeEpoch": 0
        },
        "isBase64Encoded": false
    })
    .to_string()
}

/// Serves one connection of the bootstrap: answers the first `next` with the health event,
/// cuts the response POST, and reports the second `next` (left unanswered) on `second_next`.
async fn serve_connection(
    mut conn: TcpStream,
    seen: Arc<Mutex<Vec<&'static str>>>,
    second_next: tokio::sync::mpsc::Sender<()>,
) {
    while let Some(head) = read_head(&mut conn).await {
        if head.starts_with("GET /2018-06-01/runtime/invocation/next") {
            let nexts = {
                let mut seen = seen.lock().unwrap();
                seen.push("next");
                seen.iter().filter(|s| **s == "next").count()
            };
            if nexts == 2 {
                let _ = second_next.send(()).await;
                // Hold the connection open, unanswered, until the test ends.
                std::future::pending::<()>().await;
            }
            let deadline = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 60_000;
            let body = health_event();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nlambda-runtime-aws-request-id: r1\r\nlambda-runtime-deadline-ms: {deadline}\r\nlambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:runway\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if conn.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
        } else if head.contains("/runtime/invocation/r1/") {
            // The response stream starts: cut the connection without an answer.
            seen.lock().unwrap().push("response");
            return;
        } else {
            seen.lock().unwrap().push("other");
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_response_connection_does_not_end_the_process() {
    let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = api.local_addr().unwrap().port();
    let mut bootstrap = tokio::process::Command::new(env!("CARGO_BIN_EXE_bootstrap"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{port}"))
        .env("AWS_LAMBDA_FUNCTION_NAME", "runway")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUNWAY_AUTH_HEADERS", "X-API-Key: k1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("bootstrap runs");

    // What the stand-in saw, in order: "next" for each `GET …/invocation/next`, "response"
    // for the response POST it cut off. Each connection is served on its own task: the
    // runtime's client may open a new connection for the response while the one that carried
    // `next` is still open (its pool had not taken it back yet), and a stand-in that served
    // one connection at a time would wait on the idle one forever.
    let seen: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let (second_next, mut second_next_seen) = tokio::sync::mpsc::channel::<()>(1);
    let acceptor = {
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let (conn, _) = api.accept().await.unwrap();
                tokio::spawn(serve_connection(
                    conn,
                    Arc::clone(&seen),
                    second_next.clone(),
                ));
            }
        })
    };
    let outcome = tokio::time::timeout(Duration::from_secs(60), second_next_seen.recv()).await;
    acceptor.abort();
    let seen = seen.lock().unwrap().clone();
    let exited = bootstrap.try_wait().unwrap();
    let _ = bootstrap.kill().await;
    assert!(
        matches!(outcome, Ok(Some(()))),
        "the bootstrap never asked for a next invocation after its response connection broke: saw {seen:?}, exit status {exited:?}"
    );
    assert_eq!(seen, ["next", "response", "next"]);
}
