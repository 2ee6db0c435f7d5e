//! `bootstrap`: runway's built-in agents on AWS Lambda with response streaming, served through
//! the public [`runway_lambda::run`] like any user's agent.
//!
//! Settings come from the environment: a workers file (`RUNWAY_WORKERS_FILE` or
//! `RUNWAY_WORKERS`) naming each worker's agent, else `RUNWAY_AGENT` (`demo`, `echo`, `model` or
//! `http-probe`), and everything [`runway_lambda::run`] reads.

#[tokio::main]
async fn main() -> Result<(), runway_lambda::Error> {
    runway_lambda::run_builtin().await
}
