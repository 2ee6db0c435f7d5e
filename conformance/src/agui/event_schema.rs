//! AG-UI 1.0's event schema, sans I/O: [`event_problems`] says what makes one decoded event
//! invalid, as `@ag-ui/core` 1.0's `EventSchema` judges it (written from the specification's
//! field tables; tests/tests/agui_check.rs compares the verdicts with `@ag-ui/core`'s on every
//! event kind and hundreds of broken variants).
//!
//! Objects are open (unknown fields are allowed), so only the fields 1.0 defines are checked:
//! present when required, of the defined type when present.

use serde_json::{Map, Value};

/// Largest magnitude of a `timestamp` (JavaScript's safe integers).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// What a field must hold.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A string.
    Str,
    /// An integer (a safe one).
    Int,
    /// A non-negative safe integer.
    Count,
    /// `true` or `false`.
    Bool,
    /// Any value but `null` (the key may be absent only where the field is optional).
    NotNull,
    /// Any value, `null` included: only its presence is required.
    Any,
    /// An object (not `null`, not an array).
    Object,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An array of strings.
    Strings,
    /// A JSON Patch (an array of RFC 6902 operations).
    Patch,
    /// A tool result's content: a string or an array of content parts.
    Content,
    /// An array of messages.
    Messages,
    /// `RUN_FINISHED`'s outcome.
    RunOutcome,
    /// An array of token usage entries.
    Usage,
    /// `RUN_STARTED`'s input: a `RunAgentInput`.
    RunInput,
    /// `SUBAGENT_FINISHED`'s outcome.
    SubagentOutcome,
}

/// Whether a field must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    Required,
    Optional,
}

use Presence::{Optional, Required};
use Shape::*;

type Fields = &'static [(&'static str, Shape, Presence)];

/// The fields every event may carry.
const BASE: Fields = &[
    ("timestamp", Int, Optional),
    ("rawEvent", NotNull, Optional),
    ("metadata", Object, Optional),
];
/// Events attributed to a subagent may name it.
const SUBAGENT: Fields = &[("subagentRunId", Str, Optional)];

const TEXT_ROLES: &[&str] = &["developer", "system", "assistant", "user"];

/// Each event type: whether it carries `subagentRunId`, and its own fields.
const EVENTS: &[(&str, bool, Fields)] = &[
    (
        "TEXT_MESSAGE_START",
        true,
        &[
            ("messageId", Str, Required),
            ("role", OneOf(TEXT_ROLES), Optional),
            ("name", Str, Optional),
        ],
    ),
    (
        "TEXT_MESSAGE_CONTENT",
        true,
        &[("messageId", Str, Required), ("delta", Str, Required)],
    ),
    ("TEXT_MESSAGE_END", true, &[("messageId", Str, Required)]),
    (
        "TEXT_MESSAGE_CHUNK",
        true,
        &[
            ("messageId", Str, Optional),
            ("role", OneOf(TEXT_ROLES), Optional),
            ("delta", Str, Optional),
            ("name", Str, Optional),
        ],
    ),
    (
        "TOOL_CALL_START",
        true,
        &[
            ("toolCallId", Str, Required),
            ("toolCallName", Str, Required),
            ("parentMessageId", Str, Optional),
        ],
    ),
    (
        "TOOL_CALL_ARGS",
        true,
        &[("toolCallId", Str, Required), ("delta", Str, Required)],
    ),
    ("TOOL_CALL_END", true, &[("toolCallId", Str, Required)]),
    (
        "TOOL_CALL_CHUNK",
        true,
        &[
            ("toolCallId", Str, Optional),
            ("toolCallName", Str, Optional),
            ("parentMessageId", Str, Optional),
            ("delta", Str, Optional),
        ],
    ),
    (
        "TOOL_CALL_RESULT",
        true,
        &[
            ("messageId", Str, Required),
            ("toolCallId", Str, Required),
            ("content", Content, Required),
            ("role", OneOf(&["tool"]), Optional),
        ],
    ),
    ("STATE_SNAPSHOT", true, &[("snapshot", Any, Required)]),
    ("STATE_DELTA", true, &[("delta", Patch, Required)]),
    (
        "MESSAGES_SNAPSHOT",
        true,
        &[("messages", Messages, Required)],
    ),
    (
        "ACTIVITY_SNAPSHOT",
        true,
        &[
            ("messageId", Str, Required),
            ("activityType", Str, Required),
            ("content", Object, Required),
            ("replace", Bool, Optional),
        ],
    ),
    (
        "ACTIVITY_DELTA",
        true,
        &[
            ("messageId", Str, Required),
            ("activityType", Str, Required),
            ("patch", Patch, Required),
        ],
    ),
    (
        "RAW",
        true,
        &[("event", Any, Required), ("source", Str, Optional)],
    ),
    (
        "CUSTOM",
        true,
        &[("name", Str, Required), ("value", Any, Required)],
    ),
    (
        "RUN_STARTED",
        false,
        &[
            ("threadId", Str, Required),
            ("runId", Str, Required),
            ("protocolVersion", Str, Optional),
            ("parentRunId", Str, Optional),
            ("input", RunInput, Optional),
        ],
    ),
    (
        "RUN_FINISHED",
        false,
        &[
            ("threadId", Str, Required),
            ("runId", Str, Required),
            ("result", NotNull, Optional),
            ("outcome", RunOutcome, Optional),
            ("usage", Usage, Optional),
        ],
    ),
    (
        "RUN_ERROR",
        false,
        &[
            ("message", Str, Required),
            ("code", Str, Optional),
            ("usage", Usage, Optional),
        ],
    ),
    ("STEP_STARTED", true, &[("stepName", Str, Required)]),
    ("STEP_FINISHED", true, &[("stepName", Str, Required)]),
    ("REASONING_START", true, &[("messageId", Str, Required)]),
    (
        "REASONING_MESSAGE_START",
        true,
        &[
            ("messageId", Str, Required),
            ("role", OneOf(&["reasoning"]), Required),
        ],
    ),
    (
        "REASONING_MESSAGE_CONTENT",
        true,
        &[("messageId", Str, Required), ("delta", Str, Required)],
    ),
    (
        "REASONING_MESSAGE_END",
        true,
        &[("messageId", Str, Required)],
    ),
    (
        "REASONING_MESSAGE_CHUNK",
        true,
        &[("messageId", Str, Optional), ("delta", Str, Optional)],
    ),
    ("REASONING_END", true, &[("messageId", Str, Required)]),
    (
        "REASONING_ENCRYPTED_VALUE",
        true,
        &[
            ("subtype", OneOf(&["tool-call", "message"]), Required),
            ("entityId", Str, Required),
            ("encryptedValue", Str, Required),
        ],
    ),
    (
        "SUBAGENT_STARTED",
        false,
        &[
            ("subagentRunId", Str, Required),
            ("name", Str, Required),
            ("description", Str, Optional),
            ("parentSubagentRunId", Str, Optional),
            ("parentToolCallId", Str, Optional),
            ("parentMessageId", Str, Optional),
        ],
    ),
    (
        "SUBAGENT_FINISHED",
        false,
        &[
            ("subagentRunId", Str, Required),
            ("result", NotNull, Optional),
            ("outcome", SubagentOutcome, Optional),
        ],
    ),
    (
        "SUBAGENT_ERROR",
        false,
        &[
            ("subagentRunId", Str, Required),
            ("message", Str, Required),
            ("code", Str, Optional),
        ],
    ),
];

/// Every event type AG-UI 1.0 defines.
pub fn event_types() -> impl Iterator<Item = &'static str> {
    EVENTS.iter().map(|(t, _, _)| *t)
}

/// What makes `event` an invalid AG-UI 1.0 event (`path: problem`); empty when it is valid.
pub fn event_problems(event: &Value) -> Vec<String> {
    let mut p = Problems::default();
    let Some(obj) = event.as_object() else {
        p.add("", "an event is a JSON object");
        return p.0;
    };
    let Some(ty) = obj.get("type").and_then(Value::as_str) else {
        p.add("type", "missing or not a string");
        return p.0;
    };
    let Some((_, subagent, fields)) = EVENTS.iter().find(|(t, _, _)| *t == ty) else {
        p.add("type", &format!("{ty:?} is not an AG-UI 1.0 event type"));
        return p.0;
    };
    p.fields(obj, "", BASE);
    if *subagent {
        p.fields(obj, "", SUBAGENT);
    }
    p.fields(obj, "", fields);
    p.0
}

#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, path: &str, what: &str) {
        self.0.push(format!("{path}: {what}"));
    }

    fn fields(&mut self, obj: &Map<String, Value>, at: &str, fields: &[(&str, Shape, Presence)]) {
        for (name, shape, presence) in fields {
            let path = join(at, name);
            match obj.get(*name) {
                None if *presence == Required => self.add(&path, "required"),
                None => {}
                Some(v) => self.shape(v, &path, *shape),
            }
        }
    }

    fn shape(&mut self, v: &Value, path: &str, shape: Shape) {
        match shape {
            Str => self.expect(v.is_string(), path, "a string"),
            Int => self.expect(is_safe_int(v, false), path, "a safe integer"),
            Count => self.expect(is_safe_int(v, true), path, "a non-negative safe integer"),
            Bool => self.expect(v.is_boolean(), path, "a boolean"),
            NotNull => self.expect(!v.is_null(), path, "not null"),
            Any => {}
            Object => self.expect(v.is_object(), path, "an object"),
            OneOf(values) => self.expect(
                v.as_str().is_some_and(|s| values.contains(&s)),
                path,
                &format!("one of {values:?}"),
            ),
            Strings => self.array(v, path, |p, item, at| {
                p.expect(item.is_string(), at, "a string");
            }),
            Patch => self.array(v, path, Self::patch_op),
            Content => {
                if !v.is_string() {
                    self.array(v, path, Self::content_part);
                }
            }
            Messages => self.array(v, path, Self::message),
            RunOutcome => self.run_outcome(v, path),
            Usage => self.array(v, path, |p, item, at| {
                p.object(item, at, |p, o, at| {
                    p.fields(
                        o,
                        at,
                        &[
                            ("provider", Str, Optional),
                            ("model", Str, Optional),
                            ("inputTokens", Count, Optional),
                            ("outputTokens", Count, Optional),
                            ("totalTokens", Count, Optional),
                            ("reasoningTokens", Count, Optional),
                            ("cachedInputTokens", Count, Optional),
                            ("cacheWriteInputTokens", Count, Optional),
                        ],
                    );
                });
            }),
            RunInput => self.run_input(v, path),
            SubagentOutcome => self.object(v, path, |p, o, at| {
                match o.get("type").and_then(Value::as_str) {
                    Some("success") => {}
                    Some("suspended") => p.fields(o, at, &[("interruptIds", Strings, Optional)]),
                    _ => p.add(&join(at, "type"), "\"success\" or \"suspended\""),
                }
            }),
        }
    }

    fn expect(&mut self, ok: bool, path: &str, what: &str) {
        if !ok {
            self.add(path, &format!("must be {what}"));
        }
    }

    fn array(&mut self, v: &Value, path: &str, mut each: impl FnMut(&mut Self, &Value, &str)) {
        match v.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    each(self, item, &join(path, &i.to_string()));
                }
            }
            None => self.add(path, "must be an array"),
        }
    }

    fn object(
        &mut self,
        v: &Value,
        path: &str,
        inner: impl FnOnce(&mut Self, &Map<String, Value>, &str),
    ) {
        match v.as_object() {
            Some(o) => inner(self, o, path),
            None => self.add(path, "must be an object"),
        }
    }

    /// One RFC 6902 operation: `op`, a JSON Pointer `path`, and `value` or `from` by `op`.
    fn patch_op(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            let pointer = |p: &mut Self, key: &str| match o.get(key) {
                Some(Value::String(s)) if is_json_pointer(s) => {}
                Some(_) => p.add(&join(at, key), "must be a JSON Pointer"),
                None => p.add(&join(at, key), "required"),
            };
            match o.get("op").and_then(Value::as_str) {
                Some("add" | "replace" | "test") => {
                    pointer(p, "path");
                    if !o.contains_key("value") {
                        p.add(&join(at, "value"), "required");
                    }
                }
                Some("remove") => pointer(p, "path"),
                Some("move" | "copy") => {
                    pointer(p, "from");
                    pointer(p, "path");
                }
                _ => p.add(&join(at, "op"), "must be a JSON Patch operation"),
            }
        });
    }

    /// A content part: text, or media (image, audio, video, document) with a source.
    fn content_part(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            match o.get("type").and_then(Value::as_str) {
                Some("text") => p.fields(
                    o,
                    at,
                    &[
                        ("id", Str, Optional),
                        ("text", Str, Required),
                        ("metadata", NotNull, Optional),
                    ],
                ),
                Some("image" | "audio" | "video" | "document") => {
                    p.fields(
                        o,
                        at,
                        &[("id", Str, Optional), ("metadata", NotNull, Optional)],
                    );
                    match o.get("source") {
                        Some(source) => p.part_source(source, &join(at, "source")),
                        None => p.add(&join(at, "source"), "required"),
                    }
                }
                _ => p.add(&join(at, "type"), "must be a content part type"),
            }
        });
    }

    fn part_source(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            let mime = match o.get("type").and_then(Value::as_str) {
                Some("data") => Required,
                Some("url" | "file") => Optional,
                _ => return p.add(&join(at, "type"), "\"data\", \"url\" or \"file\""),
            };
            p.fields(o, at, &[("value", Str, Required), ("mimeType", Str, mime)]);
            if o.get("type").and_then(Value::as_str) == Some("file") {
                p.fields(o, at, &[("provider", Str, Optional)]);
            }
        });
    }

    /// A message of `MESSAGES_SNAPSHOT` or `RunAgentInput.messages`, by its role.
    fn message(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            p.fields(o, at, &[("id", Str, Required)]);
            let encrypted: Fields = &[("encryptedValue", Str, Optional)];
            match o.get("role").and_then(Value::as_str) {
                Some("developer" | "system") => {
                    p.fields(
                        o,
                        at,
                        &[("name", Str, Optional), ("content", Str, Required)],
                    );
                    p.fields(o, at, encrypted);
                }
                Some("assistant") => {
                    p.fields(
                        o,
                        at,
                        &[("name", Str, Optional), ("content", Str, Optional)],
                    );
                    p.fields(o, at, encrypted);
                    if let Some(calls) = o.get("toolCalls") {
                        p.array(calls, &join(at, "toolCalls"), Self::tool_call);
                    }
                }
                Some("user") => {
                    p.fields(
                        o,
                        at,
                        &[("name", Str, Optional), ("content", Content, Required)],
                    );
                    p.fields(o, at, encrypted);
                }
                Some("tool") => {
                    p.fields(
                        o,
                        at,
                        &[
                            ("content", Content, Required),
                            ("toolCallId", Str, Required),
                            ("error", Str, Optional),
                            ("metadata", Object, Optional),
                        ],
                    );
                    p.fields(o, at, encrypted);
                }
                Some("activity") => p.fields(
                    o,
                    at,
                    &[
                        ("activityType", Str, Required),
                        ("content", Object, Required),
                        ("metadata", Object, Optional),
                    ],
                ),
                Some("reasoning") => {
                    p.fields(
                        o,
                        at,
                        &[("content", Str, Required), ("metadata", Object, Optional)],
                    );
                    p.fields(o, at, encrypted);
                }
                _ => p.add(&join(at, "role"), "must be a message role"),
            }
        });
    }

    fn tool_call(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            p.fields(
                o,
                at,
                &[
                    ("id", Str, Required),
                    ("type", OneOf(&["function"]), Required),
                    ("encryptedValue", Str, Optional),
                    ("metadata", Object, Optional),
                ],
            );
            match o.get("function") {
                Some(f) => p.object(f, &join(at, "function"), |p, f, at| {
                    p.fields(
                        f,
                        at,
                        &[("name", Str, Required), ("arguments", Str, Required)],
                    );
                }),
                None => p.add(&join(at, "function"), "required"),
            }
        });
    }

    /// `success` (with `pendingToolCallIds`), `interrupt` (one or more interrupts) or
    /// `cancelled`.
    fn run_outcome(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            match o.get("type").and_then(Value::as_str) {
                Some("success") => p.fields(o, at, &[("pendingToolCallIds", Strings, Optional)]),
                Some("cancelled") => {}
                Some("interrupt") => match o.get("interrupts").and_then(Value::as_array) {
                    Some(list) if !list.is_empty() => {
                        for (i, it) in list.iter().enumerate() {
                            let at = join(&join(at, "interrupts"), &i.to_string());
                            p.object(it, &at, |p, it, at| {
                                p.fields(
                                    it,
                                    at,
                                    &[
                                        ("subagentRunId", Str, Optional),
                                        ("id", Str, Required),
                                        ("reason", Str, Required),
                                        ("message", Str, Optional),
                                        ("toolCallId", Str, Optional),
                                        ("responseSchema", Object, Optional),
                                        ("expiresAt", Str, Optional),
                                        ("metadata", Object, Optional),
                                    ],
                                );
                            });
                        }
                    }
                    _ => p.add(&join(at, "interrupts"), "must be a non-empty array"),
                },
                _ => p.add(
                    &join(at, "type"),
                    "must be \"success\", \"interrupt\" or \"cancelled\"",
                ),
            }
        });
    }

    /// `RunAgentInput`, as `RUN_STARTED` may echo it.
    fn run_input(&mut self, v: &Value, path: &str) {
        self.object(v, path, |p, o, at| {
            p.fields(
                o,
                at,
                &[
                    ("threadId", Str, Required),
                    ("runId", Str, Required),
                    ("protocolVersion", Str, Optional),
                    ("parentRunId", Str, Optional),
                    ("messages", Messages, Required),
                    ("forwardedProps", NotNull, Optional),
                ],
            );
            // `state` may be null (read as absent).
            if let Some(tools) = o.get("tools") {
                p.array(tools, &join(at, "tools"), |p, t, at| {
                    p.object(t, at, |p, t, at| {
                        p.fields(
                            t,
                            at,
                            &[
                                ("name", Str, Required),
                                ("description", Str, Required),
                                ("parameters", NotNull, Optional),
                                ("metadata", Object, Optional),
                            ],
                        );
                    });
                });
            }
            if let Some(context) = o.get("context") {
                p.array(context, &join(at, "context"), |p, c, at| {
                    p.object(c, at, |p, c, at| {
                        p.fields(
                            c,
                            at,
                            &[("description", Str, Required), ("value", Str, Required)],
                        );
                    });
                });
            }
            if let Some(resume) = o.get("resume") {
                p.array(resume, &join(at, "resume"), |p, r, at| {
                    p.object(r, at, |p, r, at| {
                        p.fields(
                            r,
                            at,
                            &[
                                ("interruptId", Str, Required),
                                ("status", OneOf(&["resolved", "cancelled"]), Required),
                                ("payload", NotNull, Optional),
                                ("metadata", Object, Optional),
                            ],
                        );
                    });
                });
            }
        });
    }
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    }
}

fn is_safe_int(v: &Value, non_negative: bool) -> bool {
    let Some(n) = v.as_f64() else {
        return false;
    };
    n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER && (!non_negative || n >= 0.0)
}

/// RFC 6901: empty, or `/`-separated tokens where `~` is only ever `~0` or `~1`.
fn is_json_pointer(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    if !s.starts_with('/') {
        return false;
    }
    let bytes = s.as_bytes();
    bytes
        .iter()
        .enumerate()
        .all(|(i, b)| *b != b'~' || matches!(bytes.get(i + 1), Some(b'0' | b'1')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid(v: Value) {
        assert_eq!(event_problems(&v), Vec::<String>::new(), "{v}");
    }

    fn invalid(v: Value, want: &str) {
        let p = event_problems(&v);
        assert!(p.iter().any(|p| p.contains(want)), "{v}: {p:?}");
    }

    #[test]
    fn required_fields_types_and_open_objects() {
        valid(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "", "extra": 1}));
        invalid(
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"}),
            "delta: required",
        );
        invalid(
            json!({"type": "TEXT_MESSAGE_START", "messageId": 3}),
            "messageId: must be a string",
        );
        invalid(
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"}),
            "role",
        );
        invalid(json!({"type": "NOPE"}), "not an AG-UI 1.0 event type");
        invalid(json!([1]), "JSON object");
        invalid(
            json!({"type": "STEP_STARTED", "stepName": "s", "timestamp": 1.5}),
            "timestamp",
        );
        invalid(
            json!({"type": "STEP_STARTED", "stepName": "s", "rawEvent": null}),
            "rawEvent",
        );
        valid(json!({"type": "STATE_SNAPSHOT", "snapshot": null}));
        invalid(json!({"type": "STATE_SNAPSHOT"}), "snapshot: required");
    }

    #[test]
    fn run_events() {
        valid(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "confirmation", "kind": "approval"}]},
            "usage": [{"provider": "p", "inputTokens": 3}]}),
        );
        invalid(
            json!({"type": "RUN_FINISHED", "outcome": {"type": "success"}}),
            "threadId: required",
        );
        invalid(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": []}}),
            "non-empty",
        );
        invalid(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": [{"kind": "approval"}]}}),
            "interrupts.0.id: required",
        );
        invalid(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": -1}]}),
            "usage.0.inputTokens",
        );
        invalid(
            json!({"type": "REASONING_MESSAGE_START", "messageId": "m", "role": "assistant"}),
            "role",
        );
    }

    #[test]
    fn patches_messages_and_content() {
        valid(
            json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a~1b", "value": null}, {"op": "move", "from": "", "path": "/x"}]}),
        );
        invalid(
            json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "a"}]}),
            "JSON Pointer",
        );
        invalid(
            json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a~2"}]}),
            "JSON Pointer",
        );
        invalid(
            json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a"}]}),
            "value: required",
        );
        valid(json!({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "1", "role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "source": {"type": "url", "value": "u"}}]},
            {"id": "2", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "3", "role": "tool", "toolCallId": "c", "content": "ok"}
        ]}));
        invalid(
            json!({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "1", "role": "user"}]}),
            "content: required",
        );
        invalid(
            json!({"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": [{"type": "image", "source": {"type": "data", "value": "x"}}]}),
            "mimeType: required",
        );
    }
}
