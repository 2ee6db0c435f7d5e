//! # runway-lambda
//!
//! runway on AWS Lambda: a `bootstrap` binary serves `runway-core`'s routes (`POST /runs`,
//! `GET /health`, hosted files) behind a function URL with response streaming, and keeps
//! threads, run records and hosted files in one DynamoDB table ([`DynamoStore`]).
//!
//! Your own agent's `bootstrap` is [`run`]:
//!
//! ```no_run
//! # struct MyAgent;
//! # impl runway_core::Agent for MyAgent {
//! #     async fn run(&self, _: &mut runway_core::Turn, _: &runway_core::Output) -> runway_core::AgentResult {
//! #         Ok(runway_core::Outcome::Done)
//! #     }
//! # }
//! #[tokio::main]
//! async fn main() -> Result<(), runway_lambda::Error> {
//!     runway_lambda::run(MyAgent).await
//! }
//! ```
//!
//! This crate's own `bootstrap` serves the built-in agents the same way.
//!
//! The adapter is deliberately thin: [`handle`] turns the Lambda request into an
//! `http::Request<Bytes>`, lets [`runway_core::adapter::Runway::handle`] answer, and for a streamed turn
//! returns the body at once and spawns the turn beside it. Everything about turns lives in the
//! core.
//!
//! Lambda does **not** stop a streaming invocation when the client disconnects: the turn runs
//! on (and is billed) until the agent finishes or `RUNWAY_TURN_DEADLINE_SECS` cuts it; see
//! `lambda/README.md`.
#![warn(missing_docs)]

mod body;
pub mod emf;
#[cfg(test)]
mod handle_tests;
mod init;
mod init_error;
mod logging;
mod model_agents;
mod run;
mod sdk_config;
mod sdk_http;
mod settings;
mod ssm;
mod ssm_request;
pub mod store;

use std::convert::Infallible;

use bytes::Bytes;
use runway_agents::BuiltinAgent;
use runway_core::Agent;
use runway_core::adapter::{PlatformOrigin, Reply, Runway, TokioRuntime, json_error};

pub use body::LambdaBody;
pub use init::{init_agent, init_agent_with_providers};
pub use init_error::InitError;
pub use lambda_http::Error;
pub use run::{run, run_builtin, run_with_providers};
pub use sdk_config::sdk_config;
pub use settings::{Settings, core_config, emf_line};
pub use store::DynamoStore;

/// The served application: an agent (a built-in one unless said), the DynamoDB store, tokio.
pub type App<A = BuiltinAgent<TokioRuntime>> = Runway<A, DynamoStore, TokioRuntime>;

/// Answers one function-URL request: the core decides, this only converts.
///
/// A streamed turn's body is returned immediately (its first frame is already in it) and the
/// turn runs on a spawned task; the invocation ends when the body does.
pub async fn handle<A: Agent>(
    app: &App<A>,
    req: lambda_http::Request,
) -> Result<http::Response<LambdaBody>, Infallible> {
    let origin = platform_origin(&req);
    let (mut parts, body) = req.into_parts();
    // Lambda has already received the body, but a stranger still gets no further than this.
    let intake = match app.intake(&parts) {
        Ok(intake) => intake,
        Err(refused) => return Ok(refused.into_response().map(LambdaBody::full)),
    };
    if let Some(origin) = origin {
        parts.extensions.insert(origin);
    }
    let bytes = match body {
        lambda_http::Body::Empty => Bytes::new(),
        lambda_http::Body::Text(t) => Bytes::from(t),
        lambda_http::Body::Binary(b) => Bytes::from(b),
        _ => return Ok(json_error(400, "unsupported request body").map(LambdaBody::full)),
    };
    let bytes = match intake.whole(bytes) {
        Ok(bytes) => bytes,
        Err(refused) => return Ok(refused.into_response().map(LambdaBody::full)),
    };
    Ok(
        match app.handle(http::Request::from_parts(parts, bytes)).await {
            Reply::Full(r) => r.map(LambdaBody::full),
            Reply::Stream { response, turn } => {
                tokio::spawn(turn);
                response.map(LambdaBody::stream)
            }
        },
    )
}

/// The function URL's own origin, from the request context Lambda fills in (not the `Host`
/// header, which the caller sets): what hosted-file links start with when
/// `RUNWAY_PUBLIC_URL` is unset.
fn platform_origin(req: &lambda_http::Request) -> Option<PlatformOrigin> {
    use lambda_http::RequestExt;
    use lambda_http::request::RequestContext;
    match req.request_context_ref()? {
        RequestContext::ApiGatewayV2(ctx) => ctx
            .domain_name
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(|d| PlatformOrigin(format!("https://{d}"))),
        _ => None,
    }
}
