//! The demo agent: deterministic answers that exercise every part of the contract.

use std::time::Duration;

use serde_json::json;

use runway_core::Role;
use runway_core::adapter::Runtime;
use runway_core::protocol::{ChoiceOption, Decision, Interrupt, ReviewItem};
use runway_core::{Agent, AgentError, AgentResult, Outcome, Turn};
use runway_core::{Output, OutputFile};

/// Longest `/slow` accepted, in seconds.
const MAX_SLOW_SECS: u64 = 900;
/// Largest `/long` accepted, in bytes.
const MAX_LONG_BYTES: usize = 16 * 1024 * 1024;

/// A deterministic agent for demos and conformance checks.
///
/// | input | answer |
/// |---|---|
/// | any text | `You said "B". Before that you said "A".` (the previous input on this thread) |
/// | `/slow N` | silent N seconds (heartbeats flow), then answers |
/// | `/long N` | N bytes of text |
/// | `/tool` | one tool call (start, args, end, result), then a new text message |
/// | `/approve` `/choice` `/input` `/review` `/authorize` | ends with that interrupt; the next turn's `resume` is acknowledged |
/// | `/file` | a CSV file hosted by runway, announced as an artifact |
/// | `/reason` | a reasoning message, then text |
/// | `/fail` | the agent returns an error |
/// | `/panic` | the agent panics |
/// | `/count` | how many times the agent has run on this thread |
/// | `/transcript` | the thread's stored messages, one line each: `role: text` (`role*` when interrupted) |
#[derive(Debug, Clone)]
pub struct DemoAgent<R> {
    rt: R,
}

impl<R: Runtime> DemoAgent<R> {
    /// A demo agent sleeping on `rt` for `/slow`.
    pub fn new(rt: R) -> Self {
        Self { rt }
    }
}

impl<R: Runtime> Agent for DemoAgent<R> {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        let runs = turn.context.state["runs"].as_u64().unwrap_or(0) + 1;
        turn.context.state = json!({ "runs": runs });

        if let Some(resume) = turn.resume.clone() {
            let asked = turn.context.pending_interrupt.as_ref().map_or_else(
                || "your question".to_owned(),
                |i| format!("\"{}\"", i.as_text()),
            );
            let what = match resume.decision {
                Decision::Approve => "you approved".to_owned(),
                Decision::Reject => "you rejected".to_owned(),
                Decision::Authorized => {
                    "you connected the account (the demo keeps no tokens)".to_owned()
                }
                Decision::Edit => match resume.edited_actions.first() {
                    Some(a) => format!("you edited the call to {} with {}", a.name, a.arguments),
                    None => "you edited the call".to_owned(),
                },
                Decision::Respond => {
                    let text = resume
                        .message
                        .clone()
                        .or_else(|| {
                            resume
                                .answers
                                .first()
                                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                        })
                        .unwrap_or_else(|| turn.input.clone());
                    format!("you answered \"{text}\"")
                }
                Decision::Other(d) => format!("you decided \"{d}\""),
            };
            out.text(format!("To {asked}, {what}."));
            return Ok(Outcome::Done);
        }

        let input = turn.input.trim().to_owned();
        let (command, arg) = match input.split_once(char::is_whitespace) {
            Some((c, a)) => (c, a.trim()),
            None => (input.as_str(), ""),
        };
        match command {
            "/slow" => {
                let secs = arg.parse::<u64>().unwrap_or(5).min(MAX_SLOW_SECS);
                self.rt.sleep(Duration::from_secs(secs)).await;
                out.text(format!("Done waiting {secs} seconds."));
            }
            "/long" => {
                let n = arg.parse::<usize>().unwrap_or(1000).min(MAX_LONG_BYTES);
                let line = "runway streams long answers in pieces. ";
                let mut remaining = n;
                while remaining > 0 {
                    let chunk = &line.repeat(1024)[..remaining.min(line.len() * 1024)];
                    out.text(chunk);
                    remaining -= chunk.len();
                    // Let runway send it before writing more: memory stays bounded however
                    // slowly the client reads.
                    out.ready().await;
                }
            }
            "/tool" => {
                out.text("Let me look that up.");
                let call = out.tool_call("lookup_time", &json!({"zone": "UTC"}));
                out.tool_result(&call, "12:00 UTC");
                out.text("The lookup_time tool says it is 12:00 UTC.");
            }
            "/approve" => {
                return Ok(Interrupt::Approval {
                    prompt: "Approve the demo action?".into(),
                }
                .into());
            }
            "/choice" => {
                return Ok(Interrupt::Choice {
                    prompt: "Which colour?".into(),
                    options: ["Red", "Green", "Blue"]
                        .iter()
                        .map(|c| ChoiceOption {
                            id: c.to_lowercase(),
                            label: (*c).into(),
                        })
                        .collect(),
                }
                .into());
            }
            "/input" => {
                return Ok(Interrupt::Input {
                    prompt: "What is your name?".into(),
                }
                .into());
            }
            "/review" => {
                return Ok(Interrupt::Review {
                    prompt: "Send this email?".into(),
                    items: vec![ReviewItem {
                        id: None,
                        name: "send_email".into(),
                        arguments: json!({"to": "ops@example.com", "subject": "Demo"}),
                    }],
                }
                .into());
            }
            "/authorize" => {
                return Ok(Interrupt::Authorization {
                    provider: "Demo Calendar".into(),
                    authorize_url: "https://auth.example.com/oauth/authorize?client_id=runway-demo"
                        .into(),
                }
                .into());
            }
            "/file" => {
                out.text("Here is your file.");
                out.file(OutputFile::new(
                    "runway-demo.csv",
                    "text/csv",
                    "city,temperature\nHanoi,31\nSaigon,33\n",
                ));
            }
            "/reason" => {
                out.reasoning("The user wants to see reasoning; I will show some first.");
                out.end_reasoning();
                out.text("Reasoning shown above; this is the answer.");
            }
            "/fail" => {
                return Err(AgentError::with_user_message(
                    "The demo agent failed on purpose.",
                    "demo failure requested with /fail",
                ));
            }
            "/panic" => panic!("demo panic requested with /panic"),
            "/count" => {
                out.text(format!("The agent has run {runs} times on this thread."));
            }
            "/transcript" => {
                let mut lines = format!("{} messages:\n", turn.context.messages.len());
                for m in &turn.context.messages {
                    let role = match m.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::System => "system",
                    };
                    let mark = if m.interrupted { "*" } else { "" };
                    lines.push_str(&format!("{role}{mark}: {}\n", m.content));
                }
                out.text(lines);
            }
            _ => {
                let previous = turn.context.last(Role::User).map(|m| m.content.clone());
                let said = if input.is_empty() {
                    "(nothing)"
                } else {
                    &input
                };
                match previous {
                    Some(p) => out.text(format!("You said \"{said}\". Before that you said \"{p}\".")),
                    None => out.text(format!(
                        "You said \"{said}\". This is the first thing you said in this conversation."
                    )),
                }
            }
        }
        Ok(Outcome::Done)
    }
}
