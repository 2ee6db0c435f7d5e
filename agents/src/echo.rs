use runway_core::Output;
use runway_core::{Agent, AgentResult, Outcome, Turn};

/// Answers with the user's input.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoAgent;

impl Agent for EchoAgent {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        if turn.input.is_empty() {
            out.text("(empty message)");
        } else {
            out.text(turn.input.clone());
        }
        Ok(Outcome::Done)
    }
}
