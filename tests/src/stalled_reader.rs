//! A client that stops reading must not defeat the turn deadline: the turn ends at it, is
//! recorded, and releases its claim, so a retry of the same run replays at once.

use std::time::{Duration, Instant};

use crate::client::{Client, fresh_id, run_body};
use crate::raw_http;

/// Runs the check; `Err` says what went wrong. Needs a target whose turn deadline is 8 s
/// ([`crate::TARGET_ENV`]).
pub(crate) async fn check(
    c: &Client,
    base_url: &str,
    auth: &[(String, String)],
) -> Result<(), String> {
    let run = fresh_id();
    let body = run_body(&run, &fresh_id(), "/long 6000000");
    let payload = body.to_string();
    // A 4 KiB receive window: 6 MB of answer cannot all fit in kernel buffers.
    let mut stalled = raw_http::connect(base_url, Some(4096)).await;
    let request = raw_http::head("POST", base_url, "/runs", auth, payload.len()) + &payload;
    if !raw_http::write(&mut stalled, request.as_bytes()).await {
        return Err("could not send the turn".into());
    }
    // Never read `stalled`. The deadline (8 s) passes, the turn is recorded; a retry then
    // replays the recording instead of waiting for the stalled turn.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let started = Instant::now();
    let retry = c.turn(&body).await;
    let took = started.elapsed();
    drop(stalled);
    if took > Duration::from_secs(4) {
        return Err(format!(
            "the retry took {took:?}: the stalled turn still held its claim (last frame {})",
            retry.last()
        ));
    }
    let code = retry.last()["code"].clone();
    let kind = retry.last()["type"].clone();
    // The original's recording: its text, then TURN_DEADLINE where the stream stalled
    // (RUN_FINISHED where the platform buffers the whole response itself).
    if !(code == "TURN_DEADLINE" || kind == "RUN_FINISHED") || retry.text().is_empty() {
        return Err(format!(
            "the retry is not the stalled run's recording: last frame {}, {} bytes of text",
            retry.last(),
            retry.text().len()
        ));
    }
    Ok(())
}
