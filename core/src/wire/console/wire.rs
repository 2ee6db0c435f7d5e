//! [`FrameWriter`] as the engine drives it: Console's [`Wire`].

use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::wire::{Ending, Wire};

use super::FrameWriter;

impl Wire for FrameWriter {
    const CONTENT_TYPE: &'static str = "text/event-stream";

    fn start(&mut self) {
        FrameWriter::start(self);
    }

    fn heartbeat(&mut self) {
        FrameWriter::heartbeat(self);
    }

    fn apply(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Text(t) => self.text(&t),
            AgentEvent::EndMessage => self.end_text(),
            AgentEvent::Reasoning(t) => self.reasoning(&t),
            AgentEvent::EndReasoning => self.end_reasoning(),
            AgentEvent::StepStarted(n) => self.step_started(&n),
            AgentEvent::StepFinished(n) => self.step_finished(&n),
            AgentEvent::ToolCallStart { id, name } => self.tool_call_start(&id, &name),
            AgentEvent::ToolCallArgs { id, delta } => self.tool_call_args(&id, &delta),
            AgentEvent::ToolCallEnd { id } => self.tool_call_end(&id),
            AgentEvent::ToolCallResult { id, content } => self.tool_call_result(&id, &content),
            AgentEvent::ActivitySnapshot {
                message_id,
                activity_type,
                content,
            } => self.activity_snapshot(&message_id, &activity_type, content),
            AgentEvent::ActivityDelta { message_id, patch } => {
                self.activity_delta(&message_id, patch);
            }
            AgentEvent::StateSnapshot(v) => self.state_snapshot(v),
            AgentEvent::StateDelta(v) => self.state_delta(v),
            AgentEvent::Artifact(a) => {
                self.artifact(serde_json::to_value(a).unwrap_or_default());
            }
            AgentEvent::File(_) => {
                tracing::error!("unhosted file reached the frame writer; dropped");
            }
            AgentEvent::Custom { name, value } => self.custom(&name, value),
        }
    }

    fn finish(&mut self, ending: Ending) {
        FrameWriter::finish(self, ending);
    }

    fn take_output(&mut self) -> String {
        FrameWriter::take_output(self)
    }

    fn take_final(&mut self) -> Option<String> {
        FrameWriter::take_final(self)
    }

    fn ending(&self) -> Option<&Ending> {
        self.finished().map(|f| &f.ending)
    }

    fn take_recording(&mut self) -> String {
        FrameWriter::take_recording(self)
    }

    fn answer(&self) -> &str {
        FrameWriter::answer(self)
    }

    fn replacement_error(&mut self, code: TurnErrorCode, message: &str) -> String {
        FrameWriter::replacement_error(self, code, message)
    }

    fn abort_tail(&self, code: TurnErrorCode, message: &str) -> String {
        FrameWriter::abort_tail(self, code, message)
    }
}
