//! `bootstrap`: runway on AWS Lambda with response streaming.
//!
//! Settings come from the environment: `RUNWAY_DYNAMODB_TABLE`, `RUNWAY_DYNAMODB_ENDPOINT`,
//! `RUNWAY_AUTH_HEADERS_SSM_PARAMETER` (or `RUNWAY_AUTH_HEADERS`), `RUNWAY_AGENT`, and the
//! core's `RUNWAY_*` settings.

use std::time::Instant;

use lambda_http::{Error, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let started = Instant::now();
    lambda_http::tracing::init_default_subscriber();
    // var_os: a setting that is not UTF-8 fails init, never reads as "not set".
    let env = runway_core::OsSettings::new(|k: &str| std::env::var_os(k));
    let app = runway_lambda::init(|k| env.get(k)).await;
    env.check()
        .map_err(|e| runway_lambda::InitError::Config(e.to_string()))?;
    let app = app?;
    tracing::info!(
        init_ms = started.elapsed().as_secs_f64() * 1000.0,
        "init done"
    );
    let app = &*Box::leak(Box::new(app));
    let handler = service_fn(move |req| runway_lambda::handle(app, req));
    #[cfg(feature = "concurrent")]
    return lambda_http::run_with_streaming_response_concurrent(handler).await;
    #[cfg(not(feature = "concurrent"))]
    lambda_http::run_with_streaming_response(handler).await
}
