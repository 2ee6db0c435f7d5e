//! AG-UI 1.0's ordering rules for one run, sans I/O: feed each decoded event to
//! [`RunRules::event`], then call [`RunRules::end`]; [`RunRules::problems`] says what broke the
//! rules. They are the rules `@ag-ui/client`'s `verifyEvents` enforces (an event that breaks
//! one makes the client drop the run), plus the ones a single request's run implies: the
//! events name the request's `threadId` and `runId`, and exactly one final event ends it.

use std::collections::HashSet;

use serde_json::Value;

/// The state of one run's events.
#[derive(Debug, Default)]
pub struct RunRules {
    thread_id: String,
    run_id: String,
    events: usize,
    final_event: Option<String>,
    after_final: usize,
    text: HashSet<String>,
    tools: HashSet<String>,
    steps: HashSet<(Option<String>, String)>,
    reasoning_messages: HashSet<String>,
    reasoning_spans: HashSet<String>,
    subagents: HashSet<String>,
    subagents_done: HashSet<String>,
    problems: Vec<String>,
}

impl RunRules {
    /// Rules for the run the request named `run_id` on `thread_id`.
    pub fn new(thread_id: &str, run_id: &str) -> Self {
        RunRules {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            ..RunRules::default()
        }
    }

    /// What broke the rules so far.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The final event's type (`RUN_FINISHED` or `RUN_ERROR`), once it came.
    pub fn final_event(&self) -> Option<&str> {
        self.final_event.as_deref()
    }

    fn problem(&mut self, what: String) {
        // One run can break a rule on every event: the first few say enough.
        if self.problems.len() < 20 {
            self.problems.push(what);
        }
    }

    /// Judges the next event of the run.
    pub fn event(&mut self, event: &Value) {
        self.events += 1;
        let n = self.events;
        let ty = event.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(last) = &self.final_event {
            self.after_final += 1;
            if self.after_final == 1 {
                let last = last.clone();
                self.problem(format!(
                    "event {n} ({ty}) came after {last}: a run ends with one final event"
                ));
            }
            return;
        }
        if n == 1 && ty != "RUN_STARTED" && ty != "RUN_ERROR" {
            self.problem(format!(
                "event 1 is {ty}: the first event must be RUN_STARTED"
            ));
        }
        let str_field = |k: &str| event.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = |k: &str| str_field(k).unwrap_or_default();
        let subagent = str_field("subagentRunId");
        match ty {
            "RUN_STARTED" => {
                if n > 1 {
                    self.problem(format!("event {n} is RUN_STARTED while the run is active"));
                }
                self.same_ids(event, ty);
            }
            "RUN_FINISHED" => {
                self.same_ids(event, ty);
                let open: Vec<String> = [
                    (
                        "steps",
                        self.steps
                            .iter()
                            .map(|(_, s)| s.clone())
                            .collect::<Vec<_>>(),
                    ),
                    ("text messages", self.text.iter().cloned().collect()),
                    (
                        "reasoning messages",
                        self.reasoning_messages.iter().cloned().collect(),
                    ),
                    (
                        "reasoning spans",
                        self.reasoning_spans.iter().cloned().collect(),
                    ),
                    ("tool calls", self.tools.iter().cloned().collect()),
                    ("subagents", self.subagents.iter().cloned().collect()),
                ]
                .into_iter()
                .filter(|(_, ids)| !ids.is_empty())
                .map(|(what, mut ids)| {
                    ids.sort();
                    format!("{what} {}", ids.join(", "))
                })
                .collect();
                if !open.is_empty() {
                    self.problem(format!(
                        "RUN_FINISHED while still open: {}",
                        open.join("; ")
                    ));
                }
                self.final_event = Some(ty.to_owned());
            }
            "RUN_ERROR" => self.final_event = Some(ty.to_owned()),
            "TEXT_MESSAGE_START" => self.open(ty, "text message", id("messageId"), Kind::Text),
            "TEXT_MESSAGE_CONTENT" => {
                self.require(ty, "text message", &id("messageId"), Kind::Text)
            }
            "TEXT_MESSAGE_END" => self.close(ty, "text message", &id("messageId"), Kind::Text),
            "TOOL_CALL_START" => self.open(ty, "tool call", id("toolCallId"), Kind::Tool),
            "TOOL_CALL_ARGS" => self.require(ty, "tool call", &id("toolCallId"), Kind::Tool),
            "TOOL_CALL_END" => self.close(ty, "tool call", &id("toolCallId"), Kind::Tool),
            "REASONING_START" => self.open(ty, "reasoning span", id("messageId"), Kind::Span),
            "REASONING_END" => self.close(ty, "reasoning span", &id("messageId"), Kind::Span),
            "REASONING_MESSAGE_START" => {
                self.open(ty, "reasoning message", id("messageId"), Kind::Reasoning);
            }
            "REASONING_MESSAGE_CONTENT" => {
                self.require(ty, "reasoning message", &id("messageId"), Kind::Reasoning);
            }
            "REASONING_MESSAGE_END" => {
                self.close(ty, "reasoning message", &id("messageId"), Kind::Reasoning);
            }
            // The guard records the step; the arm runs only when that broke a rule.
            "STEP_STARTED" if !self.steps.insert((subagent.clone(), id("stepName"))) => {
                self.problem(format!("event {n}: STEP_STARTED for a step already active"));
            }
            "STEP_FINISHED" if !self.steps.remove(&(subagent, id("stepName"))) => {
                self.problem(format!(
                    "event {n}: STEP_FINISHED for a step that was not started"
                ));
            }
            "SUBAGENT_STARTED" => {
                let sub = id("subagentRunId");
                if self.subagents.contains(&sub) || self.subagents_done.contains(&sub) {
                    self.problem(format!(
                        "event {n}: SUBAGENT_STARTED reuses subagent {sub:?}"
                    ));
                }
                self.subagents.insert(sub);
            }
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => {
                let sub = id("subagentRunId");
                if self.subagents.remove(&sub) {
                    self.subagents_done.insert(sub);
                } else {
                    self.problem(format!("event {n}: {ty} for a subagent that is not active"));
                }
            }
            _ => {}
        }
    }

    /// The stream ended: a run without its final event is cut short.
    pub fn end(&mut self) {
        if self.final_event.is_none() {
            self.problem(format!(
                "the stream ended after {} events without RUN_FINISHED or RUN_ERROR",
                self.events
            ));
        }
    }

    fn same_ids(&mut self, event: &Value, ty: &str) {
        for (key, want) in [
            ("threadId", self.thread_id.clone()),
            ("runId", self.run_id.clone()),
        ] {
            match event.get(key).and_then(Value::as_str) {
                Some(got) if got != want => self.problem(format!(
                    "{ty} names {key} {got:?}, not the request's {want:?}"
                )),
                _ => {}
            }
        }
    }

    fn set(&mut self, kind: Kind) -> &mut HashSet<String> {
        match kind {
            Kind::Text => &mut self.text,
            Kind::Tool => &mut self.tools,
            Kind::Reasoning => &mut self.reasoning_messages,
            Kind::Span => &mut self.reasoning_spans,
        }
    }

    fn open(&mut self, ty: &str, what: &str, id: String, kind: Kind) {
        if !self.set(kind).insert(id.clone()) {
            let n = self.events;
            self.problem(format!(
                "event {n}: {ty} for {what} {id:?}, already in progress"
            ));
        }
    }

    fn require(&mut self, ty: &str, what: &str, id: &str, kind: Kind) {
        if !self.set(kind).contains(id) {
            let n = self.events;
            self.problem(format!(
                "event {n}: {ty} for {what} {id:?}, which is not open"
            ));
        }
    }

    fn close(&mut self, ty: &str, what: &str, id: &str, kind: Kind) {
        if !self.set(kind).remove(id) {
            let n = self.events;
            self.problem(format!(
                "event {n}: {ty} for {what} {id:?}, which is not open"
            ));
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    Tool,
    Reasoning,
    Span,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn judge(events: &[Value]) -> Vec<String> {
        let mut r = RunRules::new("t", "r");
        for e in events {
            r.event(e);
        }
        r.end();
        r.problems().to_vec()
    }

    #[test]
    fn a_proper_run_passes() {
        let p = judge(&[
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "STEP_STARTED", "stepName": "turn"}),
            json!({"type": "REASONING_START", "messageId": "m0"}),
            json!({"type": "REASONING_MESSAGE_START", "messageId": "m0", "role": "reasoning"}),
            json!({"type": "REASONING_MESSAGE_END", "messageId": "m0"}),
            json!({"type": "REASONING_END", "messageId": "m0"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m1"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
            json!({"type": "STEP_FINISHED", "stepName": "turn"}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
        ]);
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases: [(Vec<Value>, &str); 7] = [
            (
                vec![json!({"type": "STEP_STARTED", "stepName": "s"})],
                "first event must be RUN_STARTED",
            ),
            (
                vec![json!({"type": "RUN_STARTED", "threadId": "t", "runId": "x"})],
                "not the request's",
            ),
            (
                vec![json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})],
                "without RUN_FINISHED",
            ),
            (
                vec![
                    json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                    json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}),
                ],
                "which is not open",
            ),
            (
                vec![
                    json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                    json!({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}),
                    json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
                ],
                "still open: tool calls c",
            ),
            (
                vec![
                    json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                    json!({"type": "RUN_ERROR", "message": "x"}),
                    json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
                ],
                "came after RUN_ERROR",
            ),
            (
                vec![
                    json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                    json!({"type": "STEP_FINISHED", "stepName": "s"}),
                ],
                "not started",
            ),
        ];
        for (events, want) in cases {
            let p = judge(&events);
            assert!(p.iter().any(|p| p.contains(want)), "{want}: {p:?}");
        }
    }
}
