//! `runway`: serve an External Agent locally, or check one against Console's contract.
//!
//! ```text
//! runway serve [--listen 127.0.0.1:8787] [--data-dir ./.runway] [--agent demo]
//! runway check BASE_URL [--header 'Name: value']... [--json] [--strict]
//! runway playground BASE_URL [--header 'Name: value']... [--listen 127.0.0.1:8788]
//! runway new DIR [--name NAME] [--runway-git URL [--runway-rev REV] | --runway-version V]
//! runway usage BASE_URL [--header 'Name: value']... [--from DAY] [--to DAY] [--json|--csv]
//! runway connections BASE_URL [--header 'Name: value']... [--workspace W] [--user U] [--json]
//! runway connections BASE_URL [--header …]... --revoke --workspace W --user U [--provider P]
//! ```
//!
//! `runway serve` serves a built-in agent through the library's public [`runway::run`], the
//! same server a user's own binary gets from [`runway::serve`].

mod new_crate;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use runway_agents::BuiltinAgent;
use runway_core::adapter::TokioRuntime;

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
    /// Serve a built-in agent over Console's protocol with an embedded SQLite store.
    Serve {
        #[command(flatten)]
        serve: runway::ServeArgs,
        /// Which built-in agent to serve: demo, echo, model (the RUNWAY_MODEL_* settings) or
        /// http-probe (relays RUNWAY_HTTP_PROBE_URL) [default: RUNWAY_AGENT, else demo].
        #[arg(long)]
        agent: Option<String>,
    },
    /// Check any External Agent against Console's onboarding checklist
    /// (`runway check --help` for options).
    #[command(disable_help_flag = true)]
    Check {
        /// BASE_URL and options, passed to the checker.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Print a deployment's usage (turns, tokens, cost per workspace, worker and day) from its
    /// `GET /usage`.
    Usage(runway::UsageArgs),
    /// List a deployment's connected accounts (provider, user, workspace, scopes, expiry:
    /// never a token) from its `GET /connections`; with --revoke, revoke one user's.
    Connections(runway::ConnectionsArgs),
    /// Chat with any External Agent in the browser, as Console shows it, through a local proxy
    /// that adds the agreed headers.
    Playground(runway::PlaygroundArgs),
    /// Write a starter crate for your own agent into DIR (served locally, on AWS Lambda and on
    /// Cloudflare Workers), depending on this runway checkout (by a relative path when DIR is
    /// beside or inside it), a git repository, or a published version.
    New {
        /// Where to create the crate (must not exist or be empty).
        dir: PathBuf,
        /// The crate's name (default: DIR's last component).
        #[arg(long)]
        name: Option<String>,
        /// Depend on runway from this git repository (a fork) instead of this checkout.
        #[arg(long, value_name = "URL")]
        runway_git: Option<String>,
        /// With --runway-git: the tag, branch or commit.
        #[arg(long, value_name = "REV", requires = "runway_git")]
        runway_rev: Option<String>,
        /// Depend on this published version of runway (pinned exactly) instead of this checkout.
        #[arg(long, value_name = "VERSION", conflicts_with = "runway_git")]
        runway_version: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::New {
        dir,
        name,
        runway_git,
        runway_rev,
        runway_version,
    } = cli.command
    {
        return new(
            &dir,
            name.as_deref(),
            runway_git,
            runway_rev,
            runway_version,
        );
    }
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
        Command::Serve { serve, agent } => {
            // Before the agent is built: what it logs then (the model agent's warnings) is seen.
            runway::init_logging();
            let env = |k: &str| std::env::var(k).ok();
            if runway_agents::settings::workers_file_in_env() {
                // The file names each worker's agent (model, a built-in): RUNWAY_AGENT is not used.
                return rt.block_on(runway::run(runway_core::Workers::new(), serve));
            }
            let agent = agent.unwrap_or_else(|| runway_agents::settings::agent_name(env));
            let built = if agent == "model" {
                BuiltinAgent::model(&TokioRuntime, env, runway_agents::read_start_up_text)
            } else {
                BuiltinAgent::from_settings(&agent, &TokioRuntime, env)
            };
            let agent = match built {
                Ok(agent) => agent,
                Err(e) => {
                    eprintln!("runway: configuration: {e}");
                    return ExitCode::FAILURE;
                }
            };
            // The model agent keeps downloaded attachments in the data directory.
            let agent = match agent {
                BuiltinAgent::Model(model) => match runway::ServeModels::open(&serve.data_dir) {
                    Ok(models) => BuiltinAgent::Model(models.prepare(model)),
                    Err(e) => {
                        eprintln!("runway: data directory: {e}");
                        return ExitCode::FAILURE;
                    }
                },
                other => other,
            };
            // The tools file's OAuth providers, served with the agent.
            let providers = match &agent {
                BuiltinAgent::Model(model) => model.settings().providers.clone(),
                _ => Default::default(),
            };
            rt.block_on(runway::run_with_providers(agent, serve, providers))
        }
        Command::Check { args } => rt.block_on(runway::check(args)),
        Command::New { .. } => unreachable!("handled before the runtime starts"),
        Command::Playground(args) => rt.block_on(runway::playground(args)),
        Command::Usage(args) => rt.block_on(runway::usage(args)),
        Command::Connections(args) => rt.block_on(runway::connections(args)),
    }
}

fn new(
    dir: &std::path::Path,
    name: Option<&str>,
    git: Option<String>,
    rev: Option<String>,
    version: Option<String>,
) -> ExitCode {
    let created = new_crate::RunwaySource::from_flags(git, rev, version)
        .and_then(|source| new_crate::create(dir, name, &source));
    match created {
        Ok(created) => {
            let dir = created.dir.display();
            println!("Created {} in {dir}. Next:", created.name);
            println!("  cd {dir}");
            println!("  cargo run -- serve");
            println!("  runway check http://127.0.0.1:8787 --strict");
            println!("README.md there shows deploying to AWS Lambda and Cloudflare Workers.");
            if let Some(note) = created.note {
                eprintln!("note: {note}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("runway new: {e}");
            ExitCode::FAILURE
        }
    }
}
