//! `runway serve` against clients that do not play along, over loopback: slowloris heads and
//! bodies, a `Content-Length` larger than the body, strangers' bodies, and a client that
//! stops reading. Each check is bounded in time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use runway_e2e::raw_http::{self, connect, head, read_until_closed};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use tokio::process::Command;

/// `runway serve`'s header-read and body-read timeouts (10 s each), plus slack.
const TIMEOUT_AND_SLACK: Duration = Duration::from_secs(16);

async fn start() -> (AgentProcess, PathBuf) {
    let dir = free_data_dir("limits");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "warn");
    (AgentProcess::start(cmd, Duration::from_secs(30)).await, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_heads_are_closed_after_the_header_timeout() {
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    let started = Instant::now();
    let mut conns = Vec::new();
    for _ in 0..50 {
        let mut s = connect(&base, None).await;
        assert!(raw_http::write(&mut s, b"GET /health HTTP/1.1\r\nHost: x\r\n").await);
        conns.push(s);
    }
    // Trickle one more header byte every second: a head that never ends.
    let trickle = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            for s in &mut conns {
                let _ = raw_http::write(s, b"X").await;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), trickle).await;
    let mut still_open = 0;
    for s in &mut conns {
        let left = TIMEOUT_AND_SLACK.saturating_sub(started.elapsed());
        let (_, closed) = read_until_closed(s, left).await;
        if !closed {
            still_open += 1;
        }
    }
    let c = Client::new(&base, target_auth());
    assert_eq!(c.health().await.0, 200);
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(
        still_open, 0,
        "slowloris connections held past the header timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_content_length_gets_408() {
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    let mut s = connect(&base, None).await;
    let h = head("POST", &base, "/runs", &target_auth(), 1000);
    assert!(raw_http::write(&mut s, h.as_bytes()).await);
    assert!(raw_http::write(&mut s, br#"{"protocolVersion":"#).await);
    let (answer, closed) = read_until_closed(&mut s, TIMEOUT_AND_SLACK).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert!(closed, "connection held with a partial body: {answer:?}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(answer.contains(r#"{"error":"#), "{answer:?}");
}

/// A body whose stream breaks (a chunk size that is no number) is unreadable, not too large:
/// 400, as on every adapter (the core's request intake), and the connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_chunked_body_gets_400_unreadable() {
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    let mut s = connect(&base, None).await;
    let h = head("POST", &base, "/runs", &target_auth(), 0)
        .replace("Content-Length: 0\r\n", "Transfer-Encoding: chunked\r\n");
    assert!(raw_http::write(&mut s, h.as_bytes()).await);
    assert!(raw_http::write(&mut s, b"2\r\n{}\r\nzz\r\n").await);
    let (answer, closed) = read_until_closed(&mut s, TIMEOUT_AND_SLACK).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
    assert!(
        answer.contains(r#"{"error":"unreadable body"}"#),
        "{answer:?}"
    );
    assert!(
        closed,
        "connection held after an unreadable body: {answer:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_body_is_refused_before_it_is_read() {
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    // The head of a 1 MiB body, without credentials, and not one byte of the body: the
    // answer must come from the head alone.
    for route in ["/runs", "/lowkey/turn"] {
        let mut s = connect(&base, None).await;
        let h = head("POST", &base, route, &[], 1024 * 1024);
        assert!(raw_http::write(&mut s, h.as_bytes()).await);
        let (answer, _) = read_until_closed(&mut s, Duration::from_secs(3)).await;
        assert!(
            answer.starts_with("HTTP/1.1 401"),
            "{route}: no 401 before the body was sent: {answer:?}"
        );
    }
    // With the wrong credential too.
    let mut s = connect(&base, None).await;
    let wrong = vec![
        ("X-API-Key".to_owned(), "test-key".to_owned()),
        ("X-Tenant".to_owned(), "someone-else".to_owned()),
    ];
    let h = head("POST", &base, "/runs", &wrong, 1024 * 1024);
    assert!(raw_http::write(&mut s, h.as_bytes()).await);
    let (answer, _) = read_until_closed(&mut s, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer:?}");
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_reader_ends_at_the_deadline_and_its_run_replays() {
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    let c = Client::new(&base, target_auth());
    let run = runway_e2e::client::fresh_id();
    let body = runway_e2e::client::run_body(&run, &runway_e2e::client::fresh_id(), "/long 6000000");
    let payload = body.to_string();
    let mut stalled = connect(&base, Some(4096)).await;
    let h = head("POST", &base, "/runs", &target_auth(), payload.len()) + &payload;
    assert!(raw_http::write(&mut stalled, h.as_bytes()).await);
    // The deadline is 8 s (TARGET_ENV); the stalled turn must be recorded by then.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let started = Instant::now();
    let retry = c.turn(&body).await;
    let took = started.elapsed();
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    drop(stalled);
    assert!(took < Duration::from_secs(3), "retry waited {took:?}");
    assert_eq!(retry.last()["code"], "TURN_DEADLINE", "{}", retry.last());
    assert!(!retry.text().is_empty(), "not the stalled run's recording");
}

/// `runway serve` holds at most 2,048 turns (each keeps its recording until it commits);
/// the next one is refused with 503 at once, and `/health` still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_beyond_the_in_flight_bound_get_503() {
    const BOUND: usize = 2048;
    // 2,049 client sockets here, as many on the server: both need more than the usual 1,024.
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("getrlimit");
    assert!(
        hard >= 5000,
        "this test needs an open-file hard limit of 5,000 (is {hard})"
    );
    rlimit::setrlimit(rlimit::Resource::NOFILE, hard, hard).expect("setrlimit");
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    let auth = target_auth();
    let post = |n: usize| {
        let body = runway_e2e::client::run_body(
            &runway_e2e::client::fresh_id(),
            &format!("bound-{n}-{}", runway_e2e::client::fresh_id()),
            "/slow 30",
        )
        .to_string();
        format!("{}{body}", head("POST", &base, "/runs", &auth, body.len()))
    };
    // Open the turns in waves and wait until each has its first frame, so all are in flight.
    let mut turns = Vec::with_capacity(BOUND);
    for wave in 0..BOUND / 256 {
        let mut opened = Vec::new();
        for n in 0..256 {
            let mut s = connect(&base, None).await;
            assert!(raw_http::write(&mut s, post(wave * 256 + n).as_bytes()).await);
            opened.push(s);
        }
        for mut s in opened {
            let first = first_bytes(&mut s, Duration::from_secs(20)).await;
            assert!(
                first.starts_with("HTTP/1.1 200"),
                "turn not admitted: {first:?}"
            );
            turns.push(s);
        }
    }
    let mut one_more = connect(&base, None).await;
    assert!(raw_http::write(&mut one_more, post(BOUND).as_bytes()).await);
    let refused = first_bytes(&mut one_more, Duration::from_secs(5)).await;
    let c = Client::new(&base, target_auth());
    let health = c.health().await.0;
    // Hanging up cancels the turns; a new one is admitted again.
    drop(turns);
    let mut admitted = String::new();
    for _ in 0..50 {
        let mut s = connect(&base, None).await;
        assert!(raw_http::write(&mut s, post(BOUND + 1).as_bytes()).await);
        admitted = first_bytes(&mut s, Duration::from_secs(5)).await;
        if admitted.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused:?}");
    assert!(refused.contains(r#"{"error":"#), "{refused:?}");
    assert_eq!(health, 200);
    assert!(admitted.starts_with("HTTP/1.1 200"), "{admitted:?}");
}

/// The first bytes the server sends (up to the end of a short answer), or what arrived
/// within `within`.
async fn first_bytes(stream: &mut tokio::net::TcpStream, within: Duration) -> String {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    let _ = tokio::time::timeout(within, async {
        while !String::from_utf8_lossy(&got).contains("\r\n\r\n{")
            && !String::from_utf8_lossy(&got).contains("data:")
        {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    String::from_utf8_lossy(&got).into_owned()
}

// ---- issue 20: other web pages, slow bodies on the playground's routes, proxy headers ----

/// Status code of one raw request (`extra` header lines, then `body`).
async fn status_of(base: &str, method: &str, route: &str, extra: &str, body: &str) -> String {
    let (host, _) = raw_http::split_base(base);
    let mut s = connect(base, None).await;
    let mut req = format!("{method} {route} HTTP/1.1\r\nConnection: close\r\n");
    if !extra.contains("Host:") {
        req.push_str(&format!("Host: {host}\r\n"));
    }
    req.push_str(extra);
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    assert!(raw_http::write(&mut s, req.as_bytes()).await);
    let (answer, _) = read_until_closed(&mut s, Duration::from_secs(10)).await;
    answer.get(9..12).unwrap_or_default().to_owned()
}

/// Finding 6: `runway serve` without an auth header set answers its own origins only: a
/// DNS-rebinding `Host`, a cross-site `Origin` or `Sec-Fetch-Site`, and a `text/plain` turn
/// (which a page can send without a preflight) are refused; its own requests are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_the_server_answers_its_own_origins_only() {
    let dir = free_data_dir("own-origins");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .env_remove("RUNWAY_AUTH_HEADERS")
        .env("RUNWAY_AGENT", "demo")
        .env("RUNWAY_LOG", "error");
    let server = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let base = server.base_url().to_owned();
    let (host, _) = raw_http::split_base(&base);
    let port = host.rsplit(':').next().unwrap().to_owned();
    let turn = r#"{"protocolVersion":"1","runId":"r-RUN","threadId":"t","agentId":"a","workspaceId":"w","input":"typed by another web page"}"#;
    let turn_n = |n: &str| turn.replace("RUN", n);
    let json = "Content-Type: application/json\r\n";
    let cases = [
        (
            "GET",
            "/health",
            format!("Host: attacker.example:{port}\r\n"),
            String::new(),
            "403",
        ),
        (
            "POST",
            "/runs",
            format!("Host: attacker.example:{port}\r\n{json}"),
            turn_n("1"),
            "403",
        ),
        (
            "POST",
            "/runs",
            "Content-Type: text/plain\r\n".to_owned(),
            turn_n("2"),
            "415",
        ),
        (
            "POST",
            "/lowkey/turn",
            "Content-Type: text/plain\r\n".to_owned(),
            "{}".to_owned(),
            "415",
        ),
        (
            "POST",
            "/runs",
            format!("{json}Origin: http://127.0.0.1:1\r\n"),
            turn_n("3"),
            "403",
        ),
        (
            "POST",
            "/runs",
            format!("{json}Sec-Fetch-Site: cross-site\r\n"),
            turn_n("4"),
            "403",
        ),
        (
            "POST",
            "/runs",
            format!("{json}Origin: http://{host}\r\nSec-Fetch-Site: same-origin\r\n"),
            turn_n("5"),
            "200",
        ),
        ("POST", "/runs", json.to_owned(), turn_n("6"), "200"),
        (
            "GET",
            "/health",
            format!("Host: localhost:{port}\r\n"),
            String::new(),
            "200",
        ),
    ];
    let mut got = Vec::new();
    for (method, route, extra, body, _) in &cases {
        got.push(status_of(&base, method, route, extra, body).await);
    }
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    let want: Vec<&str> = cases.iter().map(|c| c.4).collect();
    assert_eq!(got, want);
}

/// Finding 11: `POST /playground/findings` gets the same body timeout as `/runs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_findings_route_answers_a_trickled_body_with_408() {
    let (server, dir) = start().await;
    let base = server.base_url().to_owned();
    let mut s = connect(&base, None).await;
    let h = head("POST", &base, "/playground/findings", &target_auth(), 1000);
    assert!(raw_http::write(&mut s, h.as_bytes()).await);
    let started = Instant::now();
    let trickle = async {
        loop {
            if !raw_http::write(&mut s, b" ").await {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    let _ = tokio::time::timeout(TIMEOUT_AND_SLACK, trickle).await;
    let (answer, closed) = read_until_closed(&mut s, Duration::from_secs(2)).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert!(
        closed,
        "the findings route held a trickled body for {:?}",
        started.elapsed()
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

/// Finding 11: the playground proxy checks `Host` on every route (its page included), and
/// takes the agent's headers from a file, so their values stay out of the process list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_proxy_checks_host_everywhere_and_reads_headers_from_a_file() {
    let secret = format!("s3cr3t-{}", std::process::id());
    let dir = free_data_dir("proxy-headers");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .env("RUNWAY_AUTH_HEADERS", format!("X-Secret: {secret}"))
        .env("RUNWAY_AGENT", "demo")
        .env("RUNWAY_LOG", "error");
    let agent = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let file = dir.join("headers");
    std::fs::write(&file, format!("# the agent's header\nX-Secret: {secret}\n")).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(r#""$0" playground "$1" --header-file "$2" --listen 127.0.0.1:0 | sed -u 's/^open: /base_url: /'"#)
        .arg(runway_binary())
        .arg(agent.base_url())
        .arg(&file)
        .env("RUNWAY_LOG", "error");
    let proxy = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let base = proxy.base_url().to_owned();
    let (host, _) = raw_http::split_base(&base);
    let port = host.rsplit(':').next().unwrap().to_owned();
    let rebound = format!("Host: attacker.example:{port}\r\n");
    let mut got = Vec::new();
    for (route, extra) in [
        ("/", rebound.as_str()),
        ("/playground/app.js", rebound.as_str()),
        ("/playground/settings", rebound.as_str()),
        ("/", ""),
    ] {
        got.push(status_of(&base, "GET", route, extra, "").await);
    }
    let turn = r#"{"protocolVersion":"1","runId":"r1","threadId":"t1","agentId":"a","workspaceId":"w","input":"hi"}"#;
    got.push(
        status_of(
            &base,
            "POST",
            "/runs",
            "Content-Type: application/json\r\n",
            turn,
        )
        .await,
    );
    // No process shows the value on its command line.
    let mut shown = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(&secret)
        {
            shown.push(entry.file_name());
        }
    }
    proxy.stop().await;
    agent.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(
        got,
        ["403", "403", "403", "200", "200"],
        "the agent's turn went through"
    );
    assert!(
        shown.is_empty(),
        "a header value in the process list: {shown:?}"
    );
}
