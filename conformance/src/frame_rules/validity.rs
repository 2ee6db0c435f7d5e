//! Rules 1–5: a frame after the final one is lost; a frame is a JSON object with a string
//! `type`; its `run_id` / `threadId` are the request's; `RUN_STARTED` and `REASONING_END` are
//! not sent and other types Console does not handle are dropped; each type has its required
//! fields.

use serde_json::{Map, Value};

use super::{Disposition, FrameRules, Out};
use crate::findings::Code;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Str,
    Object,
    Any,
}

fn required_fields(frame_type: &str) -> Option<&'static [(&'static str, Field)]> {
    use Field::*;
    let fields: &'static [(&'static str, Field)] = match frame_type {
        "TEXT_MESSAGE_START" | "TEXT_MESSAGE_END" => &[("messageId", Str)],
        "TEXT_MESSAGE_CONTENT" => &[("messageId", Str), ("delta", Str)],
        "RUN_FINISHED" => &[("outcome", Object)],
        "RUN_ERROR" => &[("message", Str)],
        "TOOL_CALL_START" => &[("toolCallId", Str), ("toolCallName", Str)],
        "TOOL_CALL_ARGS" => &[("toolCallId", Str), ("delta", Str)],
        "TOOL_CALL_END" => &[("toolCallId", Str)],
        "TOOL_CALL_RESULT" => &[("toolCallId", Str), ("content", Any)],
        "STEP_STARTED" | "STEP_FINISHED" => &[("stepName", Str)],
        "ACTIVITY_SNAPSHOT" => &[("messageId", Str), ("activityType", Str), ("content", Any)],
        "ACTIVITY_DELTA" => &[("messageId", Str), ("patch", Any)],
        "STATE_SNAPSHOT" => &[("snapshot", Object)],
        "STATE_DELTA" => &[("delta", Any)],
        "REASONING_MESSAGE_START" | "REASONING_MESSAGE_CONTENT" | "REASONING_MESSAGE_END" => {
            &[("messageId", Str)]
        }
        "CUSTOM" => &[("name", Str)],
        _ => return None,
    };
    Some(fields)
}

impl FrameRules {
    pub(super) fn judge(&mut self, index: usize, data: &[u8], out: &mut Out) -> Disposition {
        if self.final_frame.is_some() || self.failed {
            out.push(
                Code::FrameAfterFinal,
                format!("frame #{index} arrived after the final frame and is lost"),
            );
            return Disposition::Dropped;
        }
        let frame: Map<String, Value> = match serde_json::from_slice::<Value>(data) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                out.push(
                    Code::MalformedFrame,
                    format!("frame #{index} is JSON but not an object: dropped"),
                );
                return Disposition::Dropped;
            }
            Err(e) => {
                out.push(
                    Code::MalformedFrame,
                    format!("frame #{index} is not JSON ({e}): dropped"),
                );
                return Disposition::Dropped;
            }
        };
        let frame_type = match frame.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => {
                out.push(
                    Code::MalformedFrame,
                    format!("frame #{index} has no string `type`: dropped"),
                );
                return Disposition::Dropped;
            }
        };
        let at = format!("frame #{index} {frame_type}");
        for (field, expected) in [
            ("run_id", &self.ids.run_id),
            ("threadId", &self.ids.thread_id),
        ] {
            if let Some(v) = frame.get(field)
                && !v.is_null()
                && v.as_str() != Some(expected.as_str())
            {
                out.push(
                    Code::EnvelopeMismatch,
                    format!(
                        "{at}: {field} {v} does not match the request's {expected:?}: discarded"
                    ),
                );
                return Disposition::Dropped;
            }
        }
        match frame_type.as_str() {
            "RUN_STARTED" => {
                out.push(
                    Code::RunStartedSent,
                    format!(
                        "{at}: do not send RUN_STARTED, Console emits it when it opens the turn"
                    ),
                );
                return Disposition::Dropped;
            }
            "REASONING_END" => {
                out.push(
                    Code::ReasoningEndSent,
                    format!("{at}: do not send REASONING_END, Console emits it alongside REASONING_MESSAGE_END"),
                );
                return Disposition::Dropped;
            }
            _ => {}
        }
        let Some(fields) = required_fields(&frame_type) else {
            out.push(
                Code::UnknownFrameType,
                format!("{at}: Console does not handle this frame type: dropped"),
            );
            return Disposition::Dropped;
        };
        for (name, kind) in fields {
            let ok = match (frame.get(*name), kind) {
                (None | Some(Value::Null), _) => false,
                (Some(v), Field::Str) => v.is_string(),
                (Some(v), Field::Object) => v.is_object(),
                (Some(_), Field::Any) => true,
            };
            if !ok {
                let wanted = match kind {
                    Field::Str => "a string",
                    Field::Object => "an object",
                    Field::Any => "present",
                };
                out.push(
                    Code::MalformedFrame,
                    format!("{at}: required field `{name}` must be {wanted}: dropped"),
                );
                return Disposition::Dropped;
            }
        }
        self.apply(index, &at, &frame_type, &frame, out)
    }
}
