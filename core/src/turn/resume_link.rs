//! AG-UI's interrupt contract (its rules 2–4), checked on the thread as the store has it before
//! anything runs: a thread with an open question takes only a run whose `resume[]` answers it
//! by its id, and a `resume[]` must name the question that is open. Likewise a `tool` message
//! must answer a client tool call the previous run left pending
//! ([`ThreadContext::pending_tool_calls`]). Console and Lowkey leave this to the agent (it reads
//! [`ThreadContext::pending_interrupt`]), so their plans carry no [`ResumeLink`].

use crate::agent::context::ThreadContext;
use crate::error::TurnErrorCode;
use crate::protocol::agui::interrupt_id;

/// What an AG-UI run answers: the `interruptId`s its `resume[]` names (none: no resume), and
/// the client tool calls its `tool` messages answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResumeLink {
    pub answers: Vec<String>,
    pub tool_results: Vec<String>,
}

impl ResumeLink {
    /// Checks the run against the thread's open question. The question's id is the run that
    /// asked it ([`interrupt_id`]): the last message of a thread ending with a question is that
    /// run's answer, carrying its `runId`.
    pub fn check(&self, context: &ThreadContext) -> Result<(), TurnErrorCode> {
        self.check_question(context)?;
        let mut answered: Vec<&str> = Vec::with_capacity(self.tool_results.len());
        for call in &self.tool_results {
            // A call answered twice in one run is not pending the second time.
            if !context.pending_tool_calls.contains(call) || answered.contains(&call.as_str()) {
                return Err(TurnErrorCode::ToolResultUnmatched);
            }
            answered.push(call);
        }
        Ok(())
    }

    fn check_question(&self, context: &ThreadContext) -> Result<(), TurnErrorCode> {
        let open = context.pending_interrupt.as_ref().map(|_| {
            context
                .messages
                .last()
                .and_then(|m| m.run_id.as_deref())
                .map(interrupt_id)
                .unwrap_or_default()
        });
        match (open, self.answers.as_slice()) {
            (None, []) => Ok(()),
            (None, _) => Err(TurnErrorCode::ResumeUnmatched),
            (Some(_), []) => Err(TurnErrorCode::InterruptPending),
            // One question per run: the resume answers it, and nothing else.
            (Some(open), [only]) if *only == open => Ok(()),
            (Some(open), answers) if answers.contains(&open) => Err(TurnErrorCode::ResumeUnmatched),
            (Some(_), _) => Err(TurnErrorCode::InterruptPending),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Interrupt;
    use crate::protocol::{Message, Role};

    fn asked_by(run: &str) -> ThreadContext {
        let mut answer = Message::new(Role::Assistant, "Approve?");
        answer.run_id = Some(run.to_owned());
        ThreadContext {
            messages: vec![Message::new(Role::User, "go"), answer],
            pending_interrupt: Some(Interrupt::Approval {
                prompt: "Approve?".into(),
            }),
            ..ThreadContext::default()
        }
    }

    fn link(ids: &[&str]) -> ResumeLink {
        ResumeLink {
            answers: ids.iter().map(|s| (*s).to_owned()).collect(),
            tool_results: Vec::new(),
        }
    }

    fn results(ids: &[&str]) -> ResumeLink {
        ResumeLink {
            answers: Vec::new(),
            tool_results: ids.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn a_tool_result_must_answer_a_call_left_for_the_client() {
        let waiting = ThreadContext {
            pending_tool_calls: vec!["call_a".into(), "call_b".into()],
            ..ThreadContext::default()
        };
        assert_eq!(results(&["call_a", "call_b"]).check(&waiting), Ok(()));
        assert_eq!(results(&["call_b"]).check(&waiting), Ok(()), "one may wait");
        assert_eq!(
            results(&[]).check(&waiting),
            Ok(()),
            "the user wrote instead"
        );
        assert_eq!(
            results(&["call_c"]).check(&waiting),
            Err(TurnErrorCode::ToolResultUnmatched),
            "a call never made"
        );
        assert_eq!(
            results(&["call_a", "call_a"]).check(&waiting),
            Err(TurnErrorCode::ToolResultUnmatched),
            "one call answered twice"
        );
        assert_eq!(
            results(&["call_a"]).check(&ThreadContext::default()),
            Err(TurnErrorCode::ToolResultUnmatched),
            "nothing pending (answered already)"
        );
    }

    #[test]
    fn a_thread_without_a_question_takes_input_and_refuses_a_resume() {
        let free = ThreadContext::default();
        assert_eq!(link(&[]).check(&free), Ok(()));
        assert_eq!(
            link(&["r1.interrupt"]).check(&free),
            Err(TurnErrorCode::ResumeUnmatched)
        );
    }

    #[test]
    fn an_open_question_takes_only_its_own_answer() {
        let asked = asked_by("r1");
        assert_eq!(link(&["r1.interrupt"]).check(&asked), Ok(()));
        assert_eq!(
            link(&[]).check(&asked),
            Err(TurnErrorCode::InterruptPending)
        );
        assert_eq!(
            link(&["r0.interrupt"]).check(&asked),
            Err(TurnErrorCode::InterruptPending),
            "a resume that leaves the open question unanswered"
        );
        assert_eq!(
            link(&["r1.interrupt", "r0.interrupt"]).check(&asked),
            Err(TurnErrorCode::ResumeUnmatched),
            "an entry naming a question that is not open"
        );
    }
}
