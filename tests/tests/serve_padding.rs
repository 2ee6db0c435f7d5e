//! `runway serve` streams unbuffered, so it writes no first-flush padding by default (Lambda's
//! adapter does: its function URL may hold small chunks); `RUNWAY_FIRST_FLUSH_BYTES` still adds
//! it. Over loopback, against the real binary.

use std::time::Duration;

use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::{AgentProcess, Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use tokio::process::Command;

/// Bytes of the turn's stream that are not `data:` frames (the padding comment, heartbeats).
async fn comment_bytes(extra_env: &[(&str, &str)]) -> usize {
    let dir = free_data_dir("padding");
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .envs(TARGET_ENV)
        .envs(extra_env.iter().copied())
        .env("RUNWAY_LOG", "warn");
    let server = AgentProcess::start(cmd, Duration::from_secs(30)).await;
    let c = Client::new(server.base_url(), target_auth());
    let t = c.turn(&run_body(&fresh_id(), &fresh_id(), "hello")).await;
    assert_eq!(t.status, 200, "{}", t.body);
    assert_eq!(t.types().first(), Some(&"STEP_STARTED"), "{:?}", t.types());
    assert_eq!(t.types().last(), Some(&"RUN_FINISHED"), "{:?}", t.types());
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    t.total_bytes - t.frame_sizes.iter().sum::<usize>()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_writes_no_padding_by_default_and_the_setting_adds_it() {
    let none = comment_bytes(&[]).await;
    // A quick turn: no padding, at most a heartbeat comment or two.
    assert!(none < 256, "{none} bytes of comments without padding");
    let padded = comment_bytes(&[("RUNWAY_FIRST_FLUSH_BYTES", "102400")]).await;
    assert!(
        (102_400..102_400 + 256).contains(&padded),
        "{padded} bytes of comments with 102400 bytes of padding asked"
    );
}
