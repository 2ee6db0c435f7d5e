//! `runway`: serve an External Agent locally, or check one against Console's contract.
//!
//! ```text
//! runway serve [--listen 127.0.0.1:8787] [--data-dir ./.runway] [--agent demo]
//! runway check BASE_URL [--header 'Name: value']... [--json] [--strict]
//! runway playground BASE_URL [--header 'Name: value']... [--listen 127.0.0.1:8788]
//! ```

mod listener;
mod playground;
mod request_body;
mod serve;
mod sqlite_store;
mod write_stall;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "runway",
    version,
    about = "Serve an External Agent, or check one against Console's contract"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve an agent over Console's protocol with an embedded SQLite store.
    Serve(serve::ServeArgs),
    /// Check any External Agent against Console's onboarding checklist
    /// (`runway check --help` for options).
    #[command(disable_help_flag = true)]
    Check {
        /// BASE_URL and options, passed to the checker.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Chat with any External Agent in the browser, as Console shows it, through a local proxy
    /// that adds the agreed headers.
    Playground(playground::proxy::PlaygroundArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runway: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Serve(args) => rt.block_on(serve::run(args)),
        Command::Check { args } => {
            let code = rt.block_on(runway_conformance::cli_main(args));
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Command::Playground(args) => rt.block_on(playground::proxy::run(args)),
    }
}
