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

/// The agent's tests: each turn goes through runway's real engine (the frames Console would
/// read, the thread as it is saved) on a memory store and a virtual clock. `cargo test`.
#[cfg(test)]
mod tests {
    use runway_core::protocol::Decision;
    use runway_core::testing::{TestRunway, TestTurn};

    use super::MyAgent;

    #[tokio::test]
    async fn answers_and_remembers_the_thread() {
        let runway = TestRunway::new(MyAgent);
        let first = runway.send(TestTurn::new("hello")).await;
        assert!(first.is_success(), "{first:?}");
        assert_eq!(first.text(), "You said: hello (turn 1 of this conversation)");
        assert_eq!(first.state()["turns"], 1);

        // The same thread: the agent sees the first turn and its state.
        let second = runway.send(TestTurn::new("again")).await;
        assert_eq!(
            second.text(),
            "You said: again (turn 2 of this conversation). Before that you said: hello"
        );
        assert_eq!(second.saved().unwrap().messages.len(), 4);
    }

    #[tokio::test]
    async fn the_users_decision_arrives_in_resume() {
        let frames = TestTurn::new("").resume(Decision::Approve).run(&MyAgent).await;
        assert_eq!(
            frames.text(),
            "You decided: approve (turn 1 of this conversation)"
        );
        assert!(frames.interrupt().is_none());
    }
}
