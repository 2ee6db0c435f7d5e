//! `runway check BASE_URL ...`: the command line of the checklist.

use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use url::Url;

use crate::agui::checklist::{AguiCheckConfig, run_agui_checklist};
use crate::checklist::{CheckConfig, DEFAULT_CONTEXT_FIRST, DEFAULT_CONTEXT_SECOND, run_checklist};
use crate::deadlines::{Deadlines, StreamLimits, parse_duration};
use crate::transport::{HeaderSet, Settings};

/// Check an External Agent against Console's contract: both endpoints,
/// authentication, first-frame time, context, proper endings, heartbeat,
/// idempotency and branch isolation.
#[derive(Debug, Clone, Parser)]
#[command(name = "runway check", version, about, long_about = None)]
pub struct CheckArgs {
    /// The agent's base_url (POST {base_url}/runs and GET {base_url}/health).
    #[arg(value_name = "BASE_URL")]
    pub base_url: String,

    /// A header of the agreed set, sent verbatim on both endpoints
    /// (repeatable). With headers, every one is also left out and sent wrong
    /// in turn, expecting 401.
    #[arg(long = "header", short = 'H', value_name = "'Name: value'")]
    pub headers: Vec<String>,

    /// The contract checked: Console's External Agent contract (BASE_URL is the agent's
    /// base_url), or AG-UI 1.0 (BASE_URL is the endpoint an AG-UI client POSTs its
    /// RunAgentInput to, e.g. `{base_url}/agui/{agentId}` on runway).
    #[arg(long, value_enum, default_value_t = Protocol::Console)]
    pub protocol: Protocol,

    /// Print a machine-readable JSON report instead of the checklist.
    #[arg(long)]
    pub json: bool,

    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    pub strict: bool,

    /// Apply Console's base_url rules: https only, no user:pass@, no
    /// private/loopback/link-local/reserved/multicast address after DNS.
    #[arg(long)]
    pub egress_strict: bool,

    /// The two context prompts. `{token}` in the first is replaced by a
    /// fresh token (appended when absent); the second turn must name it.
    #[arg(long, num_args = 2, value_names = ["FIRST", "SECOND"])]
    pub context_prompts: Option<Vec<String>>,

    /// A prompt that keeps the agent busy, to check heartbeats
    /// (e.g. '/slow 20' for runway's demo agent). Skipped when absent.
    #[arg(long, value_name = "PROMPT")]
    pub slow_prompt: Option<String>,

    /// The agentId the turns carry (default: a fresh one). Give one the deployment serves
    /// when it serves several Digital Workers (a runway workers file).
    #[arg(long, value_name = "ID")]
    pub agent_id: Option<String>,

    /// The workspaceId the turns carry (default: a fresh one).
    #[arg(long, value_name = "ID")]
    pub workspace_id: Option<String>,

    /// TCP and TLS connect deadline.
    #[arg(long, value_parser = parse_duration, default_value = "5s", value_name = "DURATION")]
    pub connect_timeout: Duration,

    /// First-frame deadline, from the start of the response.
    #[arg(long, value_parser = parse_duration, default_value = "10s", value_name = "DURATION")]
    pub first_frame_timeout: Duration,

    /// Silence allowed between chunks mid-stream.
    #[arg(long, value_parser = parse_duration, default_value = "30s", value_name = "DURATION")]
    pub idle_timeout: Duration,

    /// Whole-turn deadline.
    #[arg(long, value_parser = parse_duration, default_value = "5m", value_name = "DURATION")]
    pub turn_timeout: Duration,

    /// Longest silence before a heartbeat warning.
    #[arg(long, value_parser = parse_duration, default_value = "15s", value_name = "DURATION")]
    pub heartbeat_interval: Duration,

    /// A first frame later than this after the request (or after half of it, together with a
    /// heartbeat) was held on the way: FIRST_FRAME_HELD.
    #[arg(long, value_parser = parse_duration, default_value = "2s", value_name = "DURATION")]
    pub first_flush_within: Duration,

    /// How long to keep reading after the final frame for stray frames.
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub after_final: Duration,

    /// Largest frame (line) in bytes.
    #[arg(long, default_value_t = 256 * 1024, value_name = "BYTES")]
    pub max_frame_bytes: usize,

    /// Largest stream in bytes.
    #[arg(long, default_value_t = 8 * 1024 * 1024, value_name = "BYTES")]
    pub max_stream_bytes: usize,

    /// Most data frames per turn.
    #[arg(long, default_value_t = 20_000, value_name = "COUNT")]
    pub max_frames: usize,
}

/// The contract `runway check` holds an endpoint to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    /// Console's External Agent contract (`POST {base_url}/runs`, `GET {base_url}/health`).
    Console,
    /// AG-UI 1.0 (`POST` the endpoint with a `RunAgentInput`, events over SSE).
    Agui,
}

impl CheckArgs {
    /// The check configuration these arguments describe.
    pub fn to_config(&self) -> Result<CheckConfig, String> {
        let base_url = Url::parse(&self.base_url)
            .map_err(|e| format!("invalid BASE_URL {:?}: {e}", self.base_url))?;
        if !matches!(base_url.scheme(), "http" | "https") {
            return Err(format!(
                "BASE_URL must be http or https, not {}",
                base_url.scheme()
            ));
        }
        let mut config = CheckConfig::new(base_url);
        config.headers = HeaderSet::parse(&self.headers).map_err(|e| e.to_string())?;
        config.settings = Settings {
            deadlines: Deadlines {
                connect: self.connect_timeout,
                first_frame: self.first_frame_timeout,
                idle: self.idle_timeout,
                turn: self.turn_timeout,
                heartbeat: self.heartbeat_interval,
                first_flush: self.first_flush_within,
                after_final: self.after_final,
            },
            limits: StreamLimits {
                max_frame_bytes: self.max_frame_bytes,
                max_stream_bytes: self.max_stream_bytes,
                max_frames: self.max_frames,
            },
            egress_strict: self.egress_strict,
        };
        config.context_prompts = match &self.context_prompts {
            Some(p) if p.len() == 2 => (p[0].clone(), p[1].clone()),
            _ => (DEFAULT_CONTEXT_FIRST.into(), DEFAULT_CONTEXT_SECOND.into()),
        };
        config.slow_prompt = self.slow_prompt.clone();
        if let Some(id) = &self.agent_id {
            config.caller.agent_id.clone_from(id);
        }
        if let Some(id) = &self.workspace_id {
            config.caller.workspace_id.clone_from(id);
        }
        Ok(config)
    }
}

/// The entry point of `runway check`. `args` are the arguments after
/// `check` (starting at BASE_URL). Prints the checklist (or, with `--json`,
/// the JSON report) on stdout and returns the exit code: 0 all passed, 1 a
/// line failed (or warned, with `--strict`), 2 bad arguments. Runs on the
/// caller's tokio runtime (multi-thread or current-thread).
pub async fn cli_main(args: Vec<OsString>) -> i32 {
    let mut stdout = std::io::stdout();
    cli_main_with_output(args, &mut stdout).await
}

/// As [`cli_main`], writing the report to `out` instead of stdout (usage
/// errors and `--help` still go to the terminal).
pub async fn cli_main_with_output(args: Vec<OsString>, out: &mut (dyn Write + Send)) -> i32 {
    let argv = std::iter::once(OsString::from("runway check")).chain(args);
    let parsed = match CheckArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let config = match parsed.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("runway check: {e}");
            return 2;
        }
    };
    tracing::info!(base_url = %config.base_url, protocol = ?parsed.protocol, "runway check starting");
    let report = match parsed.protocol {
        Protocol::Console => run_checklist(&config).await,
        Protocol::Agui => {
            // AG-UI has no agentId: a deployment of several workers names one in the URL.
            let agui = AguiCheckConfig {
                url: config.base_url,
                headers: config.headers,
                settings: config.settings,
                slow_prompt: config.slow_prompt,
                forwarded_props: parsed
                    .workspace_id
                    .as_ref()
                    .map(|w| serde_json::json!({ "workspaceId": w })),
            };
            run_agui_checklist(&agui).await
        }
    };
    let text = if parsed.json {
        report.to_json(parsed.strict)
    } else {
        report.render_text()
    };
    let _ = writeln!(out, "{}", text.trim_end());
    let _ = out.flush();
    report.exit_code(parsed.strict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> CheckArgs {
        CheckArgs::try_parse_from(std::iter::once("runway check").chain(args.iter().copied()))
            .unwrap()
    }

    #[test]
    fn defaults_are_the_contract_defaults() {
        let a = parse(&["http://127.0.0.1:8080"]);
        let c = a.to_config().unwrap();
        assert_eq!(c.settings.deadlines, Deadlines::default());
        assert_eq!(c.settings.limits, StreamLimits::default());
        assert!(!c.settings.egress_strict);
        assert!(c.headers.is_empty());
        assert_eq!(c.context_prompts.0, DEFAULT_CONTEXT_FIRST);
    }

    #[test]
    fn every_flag() {
        let a = parse(&[
            "https://agent.example.com/fpt",
            "--header",
            "Authorization: Bearer abc",
            "-H",
            "X-Tenant: t",
            "--json",
            "--strict",
            "--egress-strict",
            "--context-prompts",
            "remember {token}",
            "what was it?",
            "--slow-prompt",
            "/slow 20",
            "--first-frame-timeout",
            "300ms",
            "--idle-timeout",
            "2",
        ]);
        let c = a.to_config().unwrap();
        assert!(a.json && a.strict);
        assert!(c.settings.egress_strict);
        assert_eq!(c.headers.0.len(), 2);
        assert_eq!(c.context_prompts.1, "what was it?");
        assert_eq!(c.slow_prompt.as_deref(), Some("/slow 20"));
        assert_eq!(c.settings.deadlines.first_frame, Duration::from_millis(300));
        assert_eq!(c.settings.deadlines.idle, Duration::from_secs(2));
    }

    #[test]
    fn the_protocol_defaults_to_console() {
        assert_eq!(parse(&["http://x"]).protocol, Protocol::Console);
        assert_eq!(
            parse(&["http://x/agui", "--protocol", "agui"]).protocol,
            Protocol::Agui
        );
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(parse(&["not a url"]).to_config().is_err());
        assert!(parse(&["ftp://x"]).to_config().is_err());
        assert!(parse(&["http://x", "-H", "nocolon"]).to_config().is_err());
    }
}
