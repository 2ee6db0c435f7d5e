//! {{name}}: a chat agent served to Console and Lowkey by runway, on one box
//! (`cargo run -- serve`), AWS Lambda (`bootstrap`) or Cloudflare Workers (`src/cloudflare.rs`).

use runway_core::{Agent, AgentResult, Outcome, Output, Role, Turn};
use serde_json::json;

#[cfg(target_arch = "wasm32")]
mod cloudflare;

/// The agent. runway calls [`Agent::run`] once per turn, streams what it writes to [`Output`],
/// and saves the thread (its messages and `turn.context.state`) after the turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct MyAgent;

impl Agent for MyAgent {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        // `state` is this thread's memory, a JSON value runway stores with the thread.
        let n = turn.context.state["turns"].as_u64().unwrap_or(0) + 1;
        turn.context.state = json!({ "turns": n });

        // The user's answer to the question the previous turn asked (see the interrupt below).
        if let Some(resume) = &turn.resume {
            out.text(format!(
                "You decided: {} (turn {n} of this conversation)",
                resume.decision.as_str()
            ));
            return Ok(Outcome::Done);
        }

        // A tool call, shown in the chat while it runs:
        //
        //     let call = out.tool_call("lookup_order", &json!({ "id": "A-1" }));
        //     out.tool_result(&call, "shipped on 20 Aug");
        //
        // Asking before acting: end the turn with an approval interrupt; the answer arrives in
        // the next turn's `turn.resume` (handled above).
        //
        //     if turn.input.contains("refund") {
        //         return Ok(runway_core::Interrupt::Approval {
        //             prompt: "Refund order A-1?".into(),
        //         }
        //         .into());
        //     }

        out.text(format!(
            "You said: {} (turn {n} of this conversation)",
            turn.input
        ));
        // The thread's earlier messages (this turn's input is not among them yet).
        if let Some(previous) = turn.context.last(Role::User) {
            out.text(format!(". Before that you said: {}", previous.content));
        }
        Ok(Outcome::Done)
    }
}
