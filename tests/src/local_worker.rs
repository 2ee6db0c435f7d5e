//! The repo's Worker under `wrangler dev` (`infra/cloudflare/local`), started with settings, for
//! the Workers suites that need their own Worker.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

use crate::{AgentProcess, TARGET_ENV};

/// Starts the Worker with [`TARGET_ENV`], warnings-only logs and `settings` (applied last, so
/// they override those). `RUNWAY_CF_PREBUILT=1` (set by
/// `scripts/test-cloudflare.sh`) reuses the suite's one build; without it the start builds the
/// Worker, installing the tools on first use.
pub async fn start_local_worker<K, V>(settings: impl IntoIterator<Item = (K, V)>) -> AgentProcess
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/cloudflare/local");
    let mut cmd = Command::new(script);
    cmd.envs(TARGET_ENV)
        .env("RUNWAY_LOG", "warn")
        .env("RUNWAY_CF_WRANGLER_LOG", "warn")
        .envs(settings);
    let prebuilt = std::env::var("RUNWAY_CF_PREBUILT").as_deref() == Ok("1");
    if prebuilt {
        cmd.arg("--no-build");
    }
    let within = Duration::from_secs(if prebuilt { 180 } else { 3600 });
    AgentProcess::start(cmd, within).await
}
