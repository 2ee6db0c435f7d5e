//! The command line [`serve`] gives a user's binary: `serve` and `check`, as the `runway`
//! binary has them.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use runway_core::Agent;

use crate::serve::ServeArgs;

#[derive(Parser)]
#[command(
    version,
    about = "Serve this agent over Console's and Lowkey's protocols, or check an agent against Console's contract"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the agent with an embedded SQLite store.
    Serve(ServeArgs),
    /// Check any External Agent against Console's onboarding checklist
    /// (`check --help` for options).
    #[command(disable_help_flag = true)]
    Check {
        /// BASE_URL and options, passed to the checker.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// The whole `main` of a binary serving `agent`: parses the command line
/// (`serve [--listen ADDR] [--data-dir DIR]` or `check BASE_URL ...`), runs it on a tokio
/// runtime, and returns the exit code.
pub fn serve<A: Agent>(agent: A) -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Serve(args) => rt.block_on(crate::serve::run(agent, args)),
        Command::Check { args } => rt.block_on(check(args)),
    }
}

/// `runway check`: plays Console against the agent at the base URL in `args` (and the checker's
/// options), prints the checklist, and fails if the agent does not pass.
pub async fn check(args: Vec<OsString>) -> ExitCode {
    let code = runway_conformance::cli_main(args).await;
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
