//! `runway serve` killed mid-turn (SIGKILL: a crash, the OOM killer, a power cut) and
//! started again on the same data directory, as systemd would: the retry of the interrupted
//! run is answered at once instead of waiting out the dead process's claim, the thread keeps
//! what was committed before the crash, and a second server on the same directory is refused.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use runway_e2e::client::{fresh_id, run_body};
use runway_e2e::raw_http;
use runway_e2e::{AgentProcess, Client, TARGET_ENV, free_data_dir, runway_binary, target_auth};
use tokio::process::Command;

fn serve_command(dir: &PathBuf) -> Command {
    let mut cmd = Command::new(runway_binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .envs(TARGET_ENV)
        .env("RUNWAY_LOG", "warn");
    cmd
}

async fn start(dir: &PathBuf) -> AgentProcess {
    AgentProcess::start(serve_command(dir), Duration::from_secs(30)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_interrupted_by_a_crash_is_answered_at_once_after_a_restart() {
    let dir = free_data_dir("crash");
    let server = start(&dir).await;
    let c = Client::new(server.base_url(), target_auth());
    let thread = format!("crash-{}", fresh_id());
    let before = c
        .turn(&run_body(&fresh_id(), &thread, "remember the crash"))
        .await;
    assert_eq!(before.status, 200);

    // A long turn is running when the process dies.
    let run_id = fresh_id();
    let body = run_body(&run_id, &thread, "/slow 4");
    // Its client keeps reading (a hang-up would end the turn as cancelled, recorded).
    let mut reader = raw_http::connect(server.base_url(), None).await;
    let body_text = body.to_string();
    let request = format!(
        "{}{body_text}",
        raw_http::head(
            "POST",
            server.base_url(),
            "/runs",
            &target_auth(),
            body_text.len()
        )
    );
    assert!(raw_http::write(&mut reader, request.as_bytes()).await);
    let (first, _) = raw_http::read_until_closed(&mut reader, Duration::from_secs(3)).await;
    assert!(first.contains("data: "), "no first frame: {first:?}");
    server.kill_hard().await;
    drop(reader);

    let server = start(&dir).await;
    let c = Client::new(server.base_url(), target_auth());
    let started = Instant::now();
    // The turn takes 4 s. What must not happen is a wait for the dead process's claim, whose
    // lease is the turn deadline (8 s here) plus 30 s: the retry would end TURN_DEADLINE.
    let retry = c.turn(&body).await;
    let waited = started.elapsed();
    let transcript = c.turn(&run_body(&fresh_id(), &thread, "/transcript")).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);

    assert_eq!(retry.status, 200);
    assert!(
        waited < Duration::from_secs(8),
        "the retry waited {waited:?} for the crashed process's claim: {:?}",
        retry.types()
    );
    assert!(
        !retry.types().contains(&"RUN_ERROR"),
        "the retry failed: {:?}",
        retry.frames
    );
    assert_eq!(retry.last()["type"], "RUN_FINISHED");
    // What was committed before the crash is there, and the retried turn once.
    let transcript = transcript.text();
    assert!(
        transcript.contains("user: remember the crash")
            && transcript.matches("user: /slow 4").count() == 1,
        "{transcript}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_the_same_data_directory_is_refused() {
    let dir = free_data_dir("crash-two");
    let server = start(&dir).await;
    let second = serve_command(&dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second server exits at once")
        .expect("runway runs");
    let c = Client::new(server.base_url(), target_auth());
    let still = c.health().await.0;
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second server started");
    assert!(
        stderr.contains("in use by another runway process"),
        "no clear reason: {stderr}"
    );
    assert_eq!(still, 200);
}
