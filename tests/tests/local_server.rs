//! The end-to-end suite against `runway serve` (axum + SQLite), and `runway check` against it.

use std::path::PathBuf;
use std::time::Duration;

use runway_e2e::{
    AgentProcess, TARGET_ENV, Target, free_data_dir, run_suite, runway_binary, target_auth,
};
use tokio::process::Command;

struct LocalServer {
    data_dir: PathBuf,
    process: Option<AgentProcess>,
    base_url: String,
    extra_env: Vec<(&'static str, &'static str)>,
}

impl LocalServer {
    async fn start(data_dir: PathBuf) -> Self {
        let mut s = Self {
            data_dir,
            process: None,
            base_url: String::new(),
            extra_env: Vec::new(),
        };
        s.spawn().await;
        s
    }

    async fn spawn_with(&mut self, env: &[(&'static str, &'static str)]) {
        self.extra_env = env.to_vec();
        self.spawn().await;
    }

    async fn spawn(&mut self) {
        let mut cmd = Command::new(runway_binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&self.data_dir)
            .envs(TARGET_ENV)
            .env("RUNWAY_WORKERS", runway_e2e::PILOT_WORKERS)
            .envs(self.extra_env.iter().copied())
            .env("RUNWAY_LOG", "warn");
        let p = AgentProcess::start(cmd, Duration::from_secs(30)).await;
        self.base_url = p.base_url().to_owned();
        self.process = Some(p);
    }
}

impl Target for LocalServer {
    fn base_url(&self) -> String {
        self.base_url.clone()
    }

    fn auth_headers(&self) -> Vec<(String, String)> {
        target_auth()
    }

    fn supports_disconnect(&self) -> bool {
        true
    }

    async fn restart(&mut self) {
        if let Some(p) = self.process.take() {
            p.stop().await;
        }
        self.spawn().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_server_passes_the_suite() {
    let dir = free_data_dir("local");
    let mut server = LocalServer::start(dir.clone()).await;
    run_suite(&mut server).await;
    // runway serve's /metrics: Prometheus text behind the header set, counting the pilot burst.
    let c = runway_e2e::Client::new(&server.base_url, target_auth());
    let (status, _) = c
        .with_auth(Vec::new())
        .raw(reqwest::Method::GET, "/metrics", Vec::new())
        .await;
    assert_eq!(status, 401, "/metrics without the header set");
    let (status, _, text) = c.get_with_auth("/metrics").await;
    assert_eq!(status, 200);
    assert!(
        text.contains(
            "runway_turns_total{worker=\"918273688800000300\",outcome=\"RATE_LIMITED\"} 90\n"
        ),
        "{text}"
    );
    if let Some(p) = server.process.take() {
        p.stop().await;
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs the real `runway check` binary against a real `runway serve`.
async fn check_against_serve(env: &[(&str, &str)], extra: &[&str]) -> (bool, String) {
    let dir = free_data_dir("check");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(env.iter().copied())
        .env("RUNWAY_LOG", "warn");
    let server = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let result = runway_e2e::runway_check(server.base_url(), extra).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_check_passes_with_a_two_header_auth_set() {
    let (ok, report) = check_against_serve(
        &[
            ("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme"),
            ("RUNWAY_HEARTBEAT_SECS", "1"),
        ],
        &[
            "--header",
            "X-API-Key: test-key",
            "--header",
            "X-Tenant: acme",
            "--slow-prompt",
            "/slow 3",
            "--strict",
        ],
    )
    .await;
    println!("{report}");
    assert!(ok, "runway check failed:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_check_passes_without_auth() {
    let (ok, report) = check_against_serve(&[("RUNWAY_HEARTBEAT_SECS", "1")], &["--strict"]).await;
    println!("{report}");
    assert!(ok, "runway check failed:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runway_check_catches_a_missing_header() {
    // The server requires two headers; the checker is told only one of them, so the
    // endpoints answer 401 and the check must fail.
    let (ok, report) = check_against_serve(
        &[("RUNWAY_AUTH_HEADERS", "X-API-Key: test-key\nX-Tenant: acme")],
        &["--header", "X-API-Key: test-key"],
    )
    .await;
    assert!(
        !ok,
        "runway check passed with one header missing:\n{report}"
    );
}

/// Runs `runway serve` with `env` and expects it to refuse to start: exit code, stdout and
/// stderr (bounded by 30 s).
async fn serve_refuses(env: &[(&str, std::ffi::OsString)]) -> (Option<i32>, String, String) {
    let dir = free_data_dir("badauth");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .env_remove("RUNWAY_AUTH_HEADERS")
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .expect("runway serve exits in time instead of serving")
        .expect("runway serve runs");
    let _ = std::fs::remove_dir_all(dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_to_start_with_unusable_auth_settings() {
    #[cfg(unix)]
    let not_utf8 = {
        use std::os::unix::ffi::OsStringExt;
        std::ffi::OsString::from_vec(b"X-API-Key: caf\xe9".to_vec())
    };
    #[cfg(not(unix))]
    let not_utf8 = std::ffi::OsString::from("");
    let cases = [
        ("not UTF-8", not_utf8),
        ("empty", "".into()),
        ("blank lines", "  \n\t\n".into()),
        ("no colon", "X-API-Key test-key".into()),
        ("empty value", "X-API-Key:".into()),
    ];
    for (label, value) in cases {
        let (code, stdout, stderr) = serve_refuses(&[("RUNWAY_AUTH_HEADERS", value)]).await;
        assert_ne!(code, Some(0), "{label}: exit {code:?}");
        assert!(code.is_some(), "{label}: still serving");
        assert!(
            !stdout.contains("base_url"),
            "{label}: it served:\n{stdout}"
        );
        assert!(
            stderr.contains("RUNWAY_AUTH_HEADERS"),
            "{label}: the error does not name the setting:\n{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn banner_lists_the_required_header_names() {
    let dir = free_data_dir("banner");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .env("RUNWAY_AUTH_HEADERS", "X-API-Key: secret-1\nX-Tenant: acme")
        .env("RUNWAY_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("runway serve starts");
    let mut stdout = child.stdout.take().unwrap();
    let mut banner = String::new();
    let read = async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        while !banner.contains("runway check") {
            let n = stdout.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            banner.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("banner in time");
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(dir);
    assert!(
        banner.contains("x-api-key: <value>") && banner.contains("x-tenant: <value>"),
        "{banner}"
    );
    assert!(!banner.contains("secret-1"), "{banner}");
}

/// A base URL under a `/files/` prefix: every check of the suite passes there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_server_passes_the_suite_under_a_files_base_path() {
    struct Based(LocalServer);
    impl Target for Based {
        fn base_url(&self) -> String {
            self.0.base_url.clone()
        }
        fn auth_headers(&self) -> Vec<(String, String)> {
            target_auth()
        }
        fn supports_disconnect(&self) -> bool {
            true
        }
        async fn restart(&mut self) {
            self.0.restart().await;
        }
    }
    let dir = free_data_dir("based");
    let mut server = Based(LocalServer {
        data_dir: dir.clone(),
        process: None,
        base_url: String::new(),
        extra_env: Vec::new(),
    });
    server
        .0
        .spawn_with(&[("RUNWAY_BASE_PATH", "/files/agent")])
        .await;
    assert!(
        server.0.base_url.ends_with("/files/agent"),
        "{}",
        server.0.base_url
    );
    run_suite(&mut server).await;
    if let Some(p) = server.0.process.take() {
        p.stop().await;
    }
    let _ = std::fs::remove_dir_all(dir);
}
