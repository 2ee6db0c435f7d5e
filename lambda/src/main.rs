//! `bootstrap`: runway's built-in agents on AWS Lambda with response streaming, served through
//! the public [`runway_lambda::run`] like any user's agent.
//!
//! Settings come from the environment: `RUNWAY_AGENT` (`demo`, `echo`, `model` or `http-probe`), and everything
//! [`runway_lambda::run`] reads.

#[tokio::main]
async fn main() -> Result<(), runway_lambda::Error> {
    let workers_file = ["RUNWAY_WORKERS_FILE", "RUNWAY_WORKERS"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()));
    if workers_file {
        // The file names each worker's agent (model, a built-in): RUNWAY_AGENT is not used.
        return runway_lambda::run(runway_core::Workers::new()).await;
    }
    let agent = runway_lambda::builtin_agent(|k| std::env::var(k).ok()).await?;
    runway_lambda::run(agent).await
}
