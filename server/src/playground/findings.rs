//! `POST /playground/findings`: the page sends one turn as it recorded it (response head, every
//! chunk with its arrival time, how the body ended) and gets back what `runway check` would
//! flag, judged by runway-conformance's rules under Console's default deadlines and limits.

use axum::body::Body;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use runway_conformance::{Deadlines, RecordedTurn, StreamLimits, judge_recorded_turn};

use super::{PageSettings, json_status};

/// A recording holds at most Console's 8 MiB stream, JSON-escaped (quotes double), plus the
/// head: anything larger is not a turn Console would have read to the end.
pub const MAX_RECORDING_BYTES: usize = 20 * 1024 * 1024;

fn error(status: StatusCode, message: String) -> Response {
    json_status(status, &message)
}

/// Judges one recorded turn.
pub async fn judge(State(settings): State<Arc<PageSettings>>, req: Request<Body>) -> Response {
    if !settings.auth.check(req.headers()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong auth headers".to_owned(),
        );
    }
    // Within the same time as a turn's body: a body trickled a byte at a time cannot hold
    // the connection (the head's timeout is the listener's, as for every route).
    let bytes = match crate::request_body::read_within(req.into_body(), MAX_RECORDING_BYTES).await {
        Ok(b) => b,
        Err(refused) => return refused.map(Body::from).into_response(),
    };
    let turn: RecordedTurn = match serde_json::from_slice(&bytes) {
        Ok(t) => t,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("not a recorded turn: {e}")),
    };
    // Judging a large recording takes a while: off the runtime threads that stream turns.
    let judged = tokio::task::spawn_blocking(move || {
        judge_recorded_turn(&turn, &Deadlines::default(), StreamLimits::default())
    })
    .await;
    match judged {
        Ok(verdict) => axum::Json(verdict).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "judging a recorded turn failed");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the recording could not be judged".to_owned(),
            )
        }
    }
}
