//! The OpenAI-compatible chat-completions stream (`stream: true`) as a sans-I/O parser: bytes
//! in, in whatever pieces the network delivers them, events out.

use serde::Deserialize;
use serde_json::Value;

/// Longest SSE line accepted (a model never sends one chunk this large).
const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Longest data of one event (its `data:` lines together, until the blank line ending it).
const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// Something the model said, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatStreamEvent {
    /// The role chunk that opens the answer.
    Role(String),
    /// Answer text.
    Text(String),
    /// Reasoning text (`reasoning_content` or `reasoning`).
    Reasoning(String),
    /// Part of a tool call. Calls are told apart by `index` (several may be in flight in
    /// parallel); `id` and `name` come with a call's first part, `arguments` is JSON text
    /// split anywhere.
    ToolCall {
        /// Which call.
        index: u32,
        /// The call id, on its first part.
        id: Option<String>,
        /// The function name, on its first part.
        name: Option<String>,
        /// More argument text.
        arguments: String,
    },
    /// Why the answer ended (`stop`, `tool_calls`, `length`…).
    Finish(String),
    /// Token usage.
    Usage(Value),
    /// `data: [DONE]`: the stream is complete.
    Done,
}

/// The stream cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatStreamError {
    /// A `data:` line that is not a chunk.
    #[error("malformed stream chunk: {0}")]
    Malformed(String),
    /// The endpoint sent an error object in the stream.
    #[error("the model endpoint reported an error: {0}")]
    Upstream(String),
    /// A line longer than 1 MiB.
    #[error("a stream line longer than {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    /// An event whose `data:` lines add up to more than 1 MiB.
    #[error("a stream event with more than {MAX_EVENT_BYTES} bytes of data")]
    EventTooLong,
}

/// Parses the stream. Feed it bytes with [`ChatStreamParser::push`]; it keeps an incomplete
/// line (or a character split across pieces) until the rest arrives.
#[derive(Debug, Default)]
pub struct ChatStreamParser {
    /// An incomplete line carried over from the previous piece.
    line: Vec<u8>,
    /// The data of the event being read (its `data:` lines joined by newlines), when
    /// `has_data`; its buffer is reused from event to event.
    data: String,
    has_data: bool,
    done: bool,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

impl ChatStreamParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once `[DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads `bytes` and appends the events they complete to `events`.
    ///
    /// # Errors
    /// A malformed chunk, an error object from the endpoint, or an overlong line. The parser
    /// should not be used after an error.
    pub fn push(
        &mut self,
        bytes: &[u8],
        events: &mut Vec<ChatStreamEvent>,
    ) -> Result<(), ChatStreamError> {
        // Line by line, not byte by byte: a model's stream is one event per token, and a
        // per-byte loop was a tenth of a model turn's CPU on wasm32 (BENCHMARKS.md).
        let mut rest = bytes;
        while !self.done {
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                if self.line.len() + rest.len() > MAX_LINE_BYTES {
                    return Err(ChatStreamError::LineTooLong);
                }
                self.line.extend_from_slice(rest);
                break;
            };
            let part = &rest[..end];
            rest = &rest[end + 1..];
            if self.line.len() + part.len() > MAX_LINE_BYTES {
                return Err(ChatStreamError::LineTooLong);
            }
            if self.line.is_empty() {
                // The whole line is in this chunk: no copy.
                self.line_end(part.strip_suffix(b"\r").unwrap_or(part), events)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(part);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.line_end(&line, events)?;
                line.clear();
                self.line = line; // its buffer serves the next split line
            }
        }
        Ok(())
    }

    /// The end of the body: dispatches a last event that had no blank line after it, and
    /// appends what it completes to `events`.
    ///
    /// # Errors
    /// As [`ChatStreamParser::push`].
    pub fn finish(&mut self, events: &mut Vec<ChatStreamEvent>) -> Result<(), ChatStreamError> {
        if !self.done {
            let line = std::mem::take(&mut self.line);
            if !line.is_empty() {
                self.line_end(&line, events)?;
            }
            self.dispatch(events)?;
        }
        Ok(())
    }

    fn line_end(
        &mut self,
        line: &[u8],
        events: &mut Vec<ChatStreamEvent>,
    ) -> Result<(), ChatStreamError> {
        if line.is_empty() {
            return self.dispatch(events);
        }
        if line[0] == b':' {
            return Ok(()); // a comment (keep-alive)
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            let value = std::str::from_utf8(value)
                .map_err(|_| ChatStreamError::Malformed("a data line that is not UTF-8".into()))?;
            if self.has_data {
                if self.data.len() + 1 + value.len() > MAX_EVENT_BYTES {
                    return Err(ChatStreamError::EventTooLong);
                }
                self.data.push('\n');
            } else {
                self.data.clear();
                self.has_data = true;
            }
            self.data.push_str(value);
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<ChatStreamEvent>) -> Result<(), ChatStreamError> {
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let data = self.data.trim();
        if data == "[DONE]" {
            self.done = true;
            events.push(ChatStreamEvent::Done);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ChatStreamError::Malformed(format!("{e} (in {} bytes of data)", data.len()))
        })?;
        if let Some(err) = chunk.error {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| err.to_string(), str::to_owned);
            return Err(ChatStreamError::Upstream(message));
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(d) = choice.delta {
                if let Some(r) = d.role.filter(|r| !r.is_empty()) {
                    events.push(ChatStreamEvent::Role(r));
                }
                if let Some(r) = d
                    .reasoning_content
                    .or(d.reasoning)
                    .filter(|r| !r.is_empty())
                {
                    events.push(ChatStreamEvent::Reasoning(r));
                }
                if let Some(t) = d.content.filter(|t| !t.is_empty()) {
                    events.push(ChatStreamEvent::Text(t));
                }
                for call in d.tool_calls.unwrap_or_default() {
                    let (name, arguments) = call
                        .function
                        .map(|f| (f.name, f.arguments.unwrap_or_default()))
                        .unwrap_or_default();
                    events.push(ChatStreamEvent::ToolCall {
                        index: call.index,
                        id: call.id.filter(|i| !i.is_empty()),
                        name: name.filter(|n| !n.is_empty()),
                        arguments,
                    });
                }
            }
            if let Some(f) = choice.finish_reason {
                events.push(ChatStreamEvent::Finish(f));
            }
        }
        if let Some(u) = chunk.usage.filter(|u| !u.is_null()) {
            events.push(ChatStreamEvent::Usage(u));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ChatStreamEvent as E;
    use super::*;
    use serde_json::json;

    /// A realistic stream: role chunk, reasoning, text (with a multi-byte character), two
    /// parallel tool calls whose arguments are split mid-JSON and interleaved, a finish
    /// reason, a usage chunk, a keep-alive comment, CRLF line ends and `[DONE]`.
    const STREAM: &str = concat!(
        ": keep-alive\n\n",
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Think \"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"more.\"},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Phở in \"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hà Nội\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"ci\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ty\\\":\\\"Hanoi\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"Huế\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":30,\"total_tokens\":42}}\n\n",
        "data: [DONE]\n\n",
    );

    fn expected() -> Vec<E> {
        let call = |index, id: Option<&str>, name: Option<&str>, arguments: &str| E::ToolCall {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
        };
        vec![
            E::Role("assistant".into()),
            E::Reasoning("Think ".into()),
            E::Reasoning("more.".into()),
            E::Text("Phở in ".into()),
            E::Text("Hà Nội".into()),
            call(0, Some("call_a"), Some("get_weather"), ""),
            call(0, None, None, "{\"ci"),
            call(1, Some("call_b"), Some("get_weather"), "{\"city\":"),
            call(0, None, None, "ty\":\"Hanoi\"}"),
            call(1, None, None, "\"Huế\"}"),
            E::Finish("tool_calls".into()),
            E::Usage(json!({"prompt_tokens":12,"completion_tokens":30,"total_tokens":42})),
            E::Done,
        ]
    }

    fn push(p: &mut ChatStreamParser, bytes: &[u8]) -> Result<Vec<E>, ChatStreamError> {
        let mut events = Vec::new();
        p.push(bytes, &mut events).map(|()| events)
    }

    fn finish(p: &mut ChatStreamParser) -> Result<Vec<E>, ChatStreamError> {
        let mut events = Vec::new();
        p.finish(&mut events).map(|()| events)
    }

    fn parse_in(pieces: &[&[u8]]) -> Vec<E> {
        let mut p = ChatStreamParser::new();
        let mut all = Vec::new();
        for piece in pieces {
            p.push(piece, &mut all).unwrap();
        }
        p.finish(&mut all).unwrap();
        all
    }

    #[test]
    fn a_realistic_stream_split_at_every_byte_boundary() {
        let bytes = STREAM.as_bytes();
        assert_eq!(parse_in(&[bytes]), expected());
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(parse_in(&[a, b]), expected(), "split at byte {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_in(&singles), expected());
    }

    /// What the borrowing parse must read as the owned one did: escapes in every string the
    /// agent reads (including a surrogate pair), unknown fields of any shape at every level,
    /// choices of other completions around index 0's, an event over two `data:` lines after a
    /// longer one (its buffer reused), `data:` without a space, CRLF line ends throughout and
    /// `[DONE]` ending in CRLF.
    const EDGES: &str = concat!(
        "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"system_fingerprint\":\"fp\",\"service_tier\":null,\"obfuscation\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"refusal\":null,\"content\":\"Say \\\"hi\\\"\\n\\u00e9\\ud83d\\ude00\\\\\"},\"logprobs\":{\"content\":[{\"token\":\"Say\",\"logprob\":-0.1,\"bytes\":[83,97,121],\"top_logprobs\":[]}]},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"}},{\"index\":0,\"delta\":{\"content\":\"a\"}},{\"index\":2,\"delta\":{\"content\":\"other\"},\"finish_reason\":\"stop\"},{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\r\n\r\n",
        "data:{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"\\ttab\",\"audio\":{\"id\":\"x\",\"data\":[1,{\"a\":[]}]}}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_\\u0041\",\"type\":\"function\",\"function\":{\"name\":\"get_\\u0077eather\",\"arguments\":\"{\\\"q\\\":\\\"\\\\u00e9\\\"}\",\"extra\":true}}]}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\r\n",
        "data: \"delta\":{\"content\":\"c\"},\"finish_reason\":\"length\"}],\r\n",
        "data: \"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3,\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\r\n\r\n",
        "data: [DONE]\r\n",
    );

    #[test]
    fn escapes_unknown_fields_other_choices_and_multi_line_events_at_every_split() {
        let expected = vec![
            E::Role("assistant".into()),
            E::Text("Say \"hi\"\n\u{e9}\u{1F600}\\".into()),
            E::Text("a".into()),
            E::Text("b".into()),
            E::Reasoning("\ttab".into()),
            E::ToolCall {
                index: 0,
                id: Some("call_A".into()),
                name: Some("get_weather".into()),
                arguments: "{\"q\":\"\\u00e9\"}".into(),
            },
            E::Text("c".into()),
            E::Finish("length".into()),
            E::Usage(
                json!({"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,
                "completion_tokens_details":{"reasoning_tokens":0}}),
            ),
            E::Done,
        ];
        let bytes = EDGES.as_bytes();
        assert_eq!(parse_in(&[bytes]), expected);
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(parse_in(&[a, b]), expected, "split at byte {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_in(&singles), expected);
    }

    #[test]
    fn an_empty_tool_call_and_choices_that_are_no_list() {
        // No function object: an empty part of call 3 (as before: its name and id unknown).
        assert_eq!(
            parse_in(&[b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3}]}}]}\n\n"]),
            vec![E::ToolCall {
                index: 3,
                id: None,
                name: None,
                arguments: String::new(),
            }]
        );
        for bad in [
            &b"data: {\"choices\":{}}\n\n"[..],
            b"data: {\"choices\":null}\n\n",
        ] {
            let mut p = ChatStreamParser::new();
            assert!(matches!(
                push(&mut p, bad),
                Err(ChatStreamError::Malformed(_))
            ));
        }
    }

    #[test]
    fn nothing_after_done_is_read() {
        let mut p = ChatStreamParser::new();
        let ev = push(
            &mut p,
            b"data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
        )
        .unwrap();
        assert_eq!(ev, vec![E::Done]);
        assert!(p.is_done());
    }

    #[test]
    fn a_last_event_without_a_blank_line_is_read_at_the_end() {
        let mut p = ChatStreamParser::new();
        assert!(
            push(
                &mut p,
                b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}"
            )
            .unwrap()
            .is_empty()
        );
        assert_eq!(finish(&mut p).unwrap(), vec![E::Text("x".into())]);
    }

    #[test]
    fn an_error_object_and_garbage_are_errors() {
        let mut p = ChatStreamParser::new();
        let e = push(
            &mut p,
            b"data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n",
        )
        .unwrap_err();
        assert_eq!(e, ChatStreamError::Upstream("overloaded".into()));
        let mut p = ChatStreamParser::new();
        assert!(matches!(
            push(&mut p, b"data: {not json\n\n"),
            Err(ChatStreamError::Malformed(_))
        ));
    }

    #[test]
    fn data_lines_without_a_blank_line_between_them_are_bounded() {
        let mut p = ChatStreamParser::new();
        let line = format!("data: {}\n", "a".repeat(MAX_LINE_BYTES - 16));
        assert!(push(&mut p, line.as_bytes()).unwrap().is_empty());
        assert_eq!(
            push(&mut p, line.as_bytes()),
            Err(ChatStreamError::EventTooLong)
        );
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut p = ChatStreamParser::new();
        let big = vec![b'a'; MAX_LINE_BYTES + 1];
        assert_eq!(push(&mut p, &big), Err(ChatStreamError::LineTooLong));
    }
}
