//! Logs of this crate's servers: to stderr (stdout carries the banner a script reads), filtered
//! by `RUNWAY_LOG` (default `info`), coloured only on a terminal.

/// Installs runway's log subscriber (stderr, filtered by `RUNWAY_LOG`) for the process, unless
/// one is installed already. [`crate::run`], [`crate::serve`] and the playground do it
/// themselves; a binary that builds its agent first calls it before, so what the agent logs
/// while it is built (the model agent's start-up warnings) is seen.
pub fn init() {
    let _already_installed = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUNWAY_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
