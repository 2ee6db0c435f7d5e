//! [`run`]: a whole `bootstrap` for any agent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lambda_http::service_fn;
use runway_agents::BuiltinAgent;
use runway_core::Agent;
use runway_core::adapter::OsSettings;
use runway_core::connect::provider::Providers;

use crate::init::{builtin_agent, init_agent_with_providers};
use crate::init_error::InitError;
use crate::model_agents::LambdaModels;

/// Serves `agent` on Lambda until the runtime stops the process: logs as Lambda expects
/// (`RUST_LOG`/`AWS_LAMBDA_LOG_LEVEL`), reads the settings from the environment
/// (`RUNWAY_DYNAMODB_TABLE`, `RUNWAY_DYNAMODB_ENDPOINT`, `RUNWAY_AUTH_HEADERS_SSM_PARAMETER` or
/// `RUNWAY_AUTH_HEADERS`, and the core's `RUNWAY_*` settings), builds the DynamoDB store, and
/// answers function-URL invocations with response streaming.
///
/// With the crate's `concurrent` feature it polls several invocations at once (Lambda Managed
/// Instances, `AWS_LAMBDA_MAX_CONCURRENCY`).
///
/// # Errors
/// An init error (a bad setting, an unreadable auth parameter), which Lambda reports and
/// retries on the next invocation; or the runtime's own failure.
pub async fn run<A: Agent>(agent: A) -> Result<(), lambda_http::Error> {
    run_with_providers(agent, Providers::new()).await
}

/// [`run`], serving connected accounts at `providers` too (see
/// [`runway_core::adapter::Runway::with_providers`]): the vault key is then required
/// (`RUNWAY_VAULT_KEY_SSM_PARAMETER` or `RUNWAY_VAULT_KEY`), and `GET {base}/connect/{id}` and
/// `GET {base}/callback` answer.
///
/// # Errors
/// As [`run`], and providers without a vault key.
pub async fn run_with_providers<A: Agent>(
    agent: A,
    providers: Providers,
) -> Result<(), lambda_http::Error> {
    let started = Instant::now();
    crate::logging::init();
    // Boxed: the caller's future (a team's `main`) holds a pointer, not the whole init and
    // runtime loop, so its layout stays within rustc's default query depth (128) with no
    // `recursion_limit` in the team's crate.
    if runway_agents::settings::workers_file_in_env() {
        return Box::pin(serve_workers(agent, started)).await;
    }
    Box::pin(serve(agent, started, providers)).await
}

/// [`run`] for this crate's own `bootstrap`: the workers of a workers file if one is set (it
/// names each worker's agent, and `RUNWAY_AGENT` is not used), else the built-in agent named by
/// `RUNWAY_AGENT`. Either is built once logging is installed, so what it logs while it is built
/// (the model agent's start-up warnings) is seen.
///
/// # Errors
/// As [`run`], and an agent that cannot be built from its settings.
pub async fn run_builtin() -> Result<(), lambda_http::Error> {
    let started = Instant::now();
    crate::logging::init();
    if runway_agents::settings::workers_file_in_env() {
        return Box::pin(serve_workers(runway_core::Workers::new(), started)).await;
    }
    let agent = Box::pin(builtin_agent(
        |k| std::env::var(k).ok(),
        std::env::vars_os(),
    ))
    .await?;
    // The tools file's OAuth providers, served with the agent.
    let providers = match &agent {
        BuiltinAgent::Model(model) => model.settings().providers.clone(),
        _ => Providers::new(),
    };
    Box::pin(serve(agent, started, providers)).await
}

/// Serves the workers of the workers file, with `agent` as `agent = "main"`: model workers
/// made as the built-in model agent is, `${NAME}` read from SSM or the environment
/// ([`LambdaModels`]).
async fn serve_workers<A: Agent>(agent: A, started: Instant) -> Result<(), lambda_http::Error> {
    let get = |k: &str| std::env::var(k).ok();
    let models = Box::pin(LambdaModels::start(&get, std::env::vars_os())).await?;
    let workers = models.workers(agent, &get)?;
    Box::pin(serve(workers, started, Providers::new())).await
}

/// Initialises the app for `agent` (with connected accounts at `providers`) and answers
/// invocations until the runtime stops.
async fn serve<A: Agent>(
    agent: A,
    started: Instant,
    providers: Providers,
) -> Result<(), lambda_http::Error> {
    // var_os: a setting that is not UTF-8 fails init, never reads as "not set".
    let env = OsSettings::new(|k: &str| std::env::var_os(k));
    let app = Box::pin(init_agent_with_providers(agent, |k| env.get(k), providers)).await;
    env.check().map_err(|e| InitError::Config(e.to_string()))?;
    let app = app?;
    tracing::info!(
        init_ms = started.elapsed().as_secs_f64() * 1000.0,
        "init done"
    );
    // One app for the process's lifetime; the handler borrows it for every invocation.
    let app = &*Box::leak(Box::new(app));
    let invocations = &*Box::leak(Box::new(AtomicU64::new(0)));
    let mut failures = 0u32;
    let mut invocations_at_failure = 0;
    loop {
        let handler = service_fn(move |req| {
            invocations.fetch_add(1, Ordering::Relaxed);
            // Boxed (one allocation per invocation): the runtime's future then holds a
            // pointer, and every layout stays within rustc's default query depth (128), in
            // this crate and in a team's `bootstrap` alike, with no `recursion_limit`.
            Box::pin(crate::handle(app, req))
        });
        #[cfg(feature = "concurrent")]
        let ended = Box::pin(lambda_http::run_with_streaming_response_concurrent(handler)).await;
        #[cfg(not(feature = "concurrent"))]
        let ended = Box::pin(lambda_http::run_with_streaming_response(handler)).await;
        let Err(e) = ended else {
            return Ok(());
        };
        // lambda_runtime's loop returns on any error talking to the Runtime API, including
        // a response stream whose connection broke (cargo-lambda's emulator cuts it when the
        // client hangs up). That invocation's answer is lost with its client; the process
        // is fine, so it goes on with a fresh connection. Only repeated failures with no
        // invocation in between (the Runtime API itself is gone) end it, as Lambda expects.
        let served = invocations.load(Ordering::Relaxed);
        if served != invocations_at_failure {
            failures = 0;
        }
        invocations_at_failure = served;
        failures += 1;
        if failures >= RUNTIME_API_ATTEMPTS {
            return Err(e);
        }
        tracing::warn!(error = %e, failures, "the Lambda Runtime API connection failed: starting over");
        tokio::time::sleep(Duration::from_millis(50 * u64::from(failures))).await;
    }
}

/// Consecutive failures of the runtime loop, with no invocation between them, that end the
/// process.
const RUNTIME_API_ATTEMPTS: u32 = 3;
