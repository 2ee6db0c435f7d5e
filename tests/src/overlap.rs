//! Overlapping turns on one thread (issue 11, item 1): one live turn per thread, a newer turn
//! supersedes an older one still running, and no turn's messages are ever lost.

use futures::future::join_all;

use crate::client::{Client, TurnStream, fresh_id, run_body};

type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// The thread's stored messages, through the demo agent's `/transcript`: `role: text` lines
/// (`role*` when interrupted).
async fn transcript(c: &Client, thread: &str) -> Result<Vec<String>, String> {
    let t = c.turn(&run_body(&fresh_id(), thread, "/transcript")).await;
    ensure!(
        t.status == 200 && t.last()["type"] == "RUN_FINISHED",
        "/transcript: HTTP {} {:?}",
        t.status,
        t.types()
    );
    Ok(t.text().lines().skip(1).map(str::to_owned).collect())
}

fn final_frame(t: &TurnStream) -> String {
    let last = t.last();
    match last["code"].as_str() {
        Some(code) => format!("{} {code}", last["type"]),
        None => last["type"].to_string(),
    }
}

/// A slow turn runs; a second one on the same thread arrives and finishes. The slow one is
/// stopped at its next heartbeat (`RUN_ERROR` `SUPERSEDED`) and recorded before it, and the
/// second turn's messages survive (they used to be erased by the slow turn's commit).
pub(crate) async fn overlapping_turns(c: &Client) -> Check {
    let thread = fresh_id();
    let slow = run_body(&fresh_id(), &thread, "/slow 6");
    let later = async {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        c.turn(&run_body(&fresh_id(), &thread, "the later question"))
            .await
    };
    let (a, b) = tokio::join!(c.turn(&slow), later);
    ensure!(
        b.last()["type"] == "RUN_FINISHED",
        "later turn: {}",
        final_frame(&b)
    );
    let lines = transcript(c, &thread).await?;
    let slow_at = lines.iter().position(|l| l == "user: /slow 6");
    let later_at = lines.iter().position(|l| l == "user: the later question");
    ensure!(
        matches!((slow_at, later_at), (Some(s), Some(l)) if s < l),
        "not both kept in arrival order: {lines:?}"
    );
    ensure!(
        lines
            .iter()
            .any(|l| l.starts_with("assistant: You said \"the later question\"")),
        "the later turn's answer was lost: {lines:?}"
    );
    ensure!(
        a.last()["code"] == "SUPERSEDED",
        "the slow turn was not superseded: {} after {:?}",
        final_frame(&a),
        a.arrivals.last()
    );
    ensure!(
        !lines.iter().any(|l| l.contains("Done waiting")),
        "the superseded turn ran to its end: {lines:?}"
    );
    Ok(())
}

/// `n` turns sent at once on one thread: every one ends properly and the thread keeps all `n`
/// user messages (the store kept 6 of 50 before versioned commits).
pub(crate) async fn burst(c: &Client, n: usize) -> Check {
    let thread = fresh_id();
    let bodies: Vec<_> = (0..n)
        .map(|i| run_body(&fresh_id(), &thread, &format!("burst {i}")))
        .collect();
    let turns = join_all(bodies.iter().map(|b| c.turn(b))).await;
    for (i, t) in turns.iter().enumerate() {
        let last = t.last();
        ensure!(
            t.status == 200 && (last["type"] == "RUN_FINISHED" || last["code"] == "SUPERSEDED"),
            "turn {i}: HTTP {} {}",
            t.status,
            final_frame(t)
        );
    }
    let lines = transcript(c, &thread).await?;
    let kept = lines
        .iter()
        .filter(|l| l.starts_with("user: burst "))
        .count();
    ensure!(
        kept == n,
        "{kept} of {n} user messages kept ({} messages stored)",
        lines.len()
    );
    Ok(())
}
