//! Logs of this crate's servers: to stderr (stdout carries the banner a script reads), filtered
//! by `RUNWAY_LOG` (default `info`), coloured only on a terminal.

/// Installs the subscriber; call once, first thing.
pub(crate) fn init() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUNWAY_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
