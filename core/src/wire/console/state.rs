//! State, activities and files in Console's stream: `STATE_SNAPSHOT` / `STATE_DELTA` keep only
//! the keys Console accepts (in the AG-UI dialect the agent's state goes as it is), activities
//! carry their type, and a file is announced on one channel only (state `artifacts` or `CUSTOM`
//! `file`).

use serde_json::{Map, Value};

use super::frame::Field;
use super::writer::Console;
use crate::protocol::LogId;
use crate::wire::writer::Writer;

/// State keys Console accepts in `STATE_SNAPSHOT` and `STATE_DELTA`.
pub const STATE_KEYS: [&str; 3] = ["todos", "artifacts", "files"];

impl Writer<Console> {
    /// `ACTIVITY_SNAPSHOT`.
    pub fn activity_snapshot(&mut self, message_id: &str, activity_type: &str, content: Value) {
        if self.is_finished() {
            return;
        }
        self.enc
            .activity_types
            .insert(message_id.to_owned(), activity_type.to_owned());
        self.emit(
            "ACTIVITY_SNAPSHOT",
            &[
                ("messageId", Field::Str(message_id)),
                ("activityType", Field::Str(activity_type)),
                ("content", Field::Json(&content)),
            ],
        );
    }

    /// `ACTIVITY_DELTA` (a JSON Patch).
    pub fn activity_delta(&mut self, message_id: &str, patch: Value) {
        if self.is_finished() {
            return;
        }
        // AG-UI 1.0 names the activity's type on every delta. A delta before its snapshot has
        // none: AG-UI clients cannot apply it (dropped); Console reads only `messageId` (sent).
        if let Some(activity_type) = self.enc.activity_types.get(message_id).cloned() {
            self.emit(
                "ACTIVITY_DELTA",
                &[
                    ("messageId", Field::Str(message_id)),
                    ("activityType", Field::Str(&activity_type)),
                    ("patch", Field::Json(&patch)),
                ],
            );
            return;
        }
        if self.enc.is_agui() {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "ACTIVITY_DELTA before its ACTIVITY_SNAPSHOT dropped");
            return;
        }
        self.emit(
            "ACTIVITY_DELTA",
            &[
                ("messageId", Field::Str(message_id)),
                ("patch", Field::Json(&patch)),
            ],
        );
    }

    /// `STATE_SNAPSHOT`, keeping only the keys Console accepts. Nothing is sent if none remain.
    pub fn state_snapshot(&mut self, snapshot: Value) {
        if self.is_finished() {
            return;
        }
        if self.enc.is_agui() {
            // AG-UI state is the agent's own: any JSON value, carried as it is.
            if self.emit("STATE_SNAPSHOT", &[("snapshot", Field::Json(&snapshot))])
                && let Some(view) = &mut self.enc.view
            {
                view.state_snapshot(snapshot);
            }
            return;
        }
        let Value::Object(obj) = snapshot else {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "STATE_SNAPSHOT that is not an object dropped");
            return;
        };
        let mut kept: Map<String, Value> = obj
            .into_iter()
            .filter(|(k, _)| {
                let ok = STATE_KEYS.contains(&k.as_str());
                if !ok {
                    tracing::warn!(run_id = %LogId(&self.enc.run_id), key = %k, "state key Console drops removed");
                }
                ok
            })
            .collect();
        if let Some(Value::Array(items)) = kept.get_mut("artifacts") {
            items.retain(|a| self.claim_state_file(a));
        }
        if kept.is_empty() {
            return;
        }
        let snapshot = Value::Object(kept);
        self.emit("STATE_SNAPSHOT", &[("snapshot", Field::Json(&snapshot))]);
    }

    /// `STATE_DELTA` (a JSON Patch array), keeping only operations on accepted keys.
    pub fn state_delta(&mut self, patch: Value) {
        if self.is_finished() {
            return;
        }
        let Value::Array(ops) = patch else {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "STATE_DELTA that is not a JSON Patch array dropped");
            return;
        };
        let agui = self.enc.is_agui();
        let kept: Vec<Value> = ops
            .into_iter()
            .filter(|op| {
                if agui {
                    return true;
                }
                let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                let key = path.trim_start_matches('/').split('/').next().unwrap_or("");
                STATE_KEYS.contains(&key)
            })
            .collect();
        if kept.is_empty() {
            return;
        }
        let delta = Value::Array(kept);
        if self.emit("STATE_DELTA", &[("delta", Field::Json(&delta))])
            && let Some(view) = &mut self.enc.view
        {
            view.state_delta(&delta);
        }
    }

    /// Announces a file the agent hosts: appended to this turn's `artifacts` and sent as a
    /// `STATE_SNAPSHOT` of them all. A URL already announced (on either channel) is not sent
    /// again: one file, one card.
    pub fn artifact(&mut self, artifact: Value) {
        if self.is_finished() || !self.claim_state_file(&artifact) {
            return;
        }
        self.enc.artifacts.push(artifact);
        let artifacts = std::mem::take(&mut self.enc.artifacts);
        if self.emit(
            "STATE_SNAPSHOT",
            &[("snapshot", Field::Artifacts(&artifacts))],
        ) && let Some(view) = &mut self.enc.view
        {
            view.artifacts(&artifacts);
        }
        self.enc.artifacts = artifacts;
    }

    /// `CUSTOM` with `name` and `value`. A `file` whose URL was already sent as an artifact
    /// is dropped.
    pub fn custom(&mut self, name: &str, value: Value) {
        if self.is_finished() {
            return;
        }
        if name == "file"
            && let Some(url) = value.get("url").and_then(Value::as_str)
            && (self.enc.state_file_urls.contains(url)
                || !self.enc.custom_file_urls.insert(url.into()))
        {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "file already announced: CUSTOM file dropped");
            return;
        }
        self.emit(
            "CUSTOM",
            &[("name", Field::Str(name)), ("value", Field::Json(&value))],
        );
    }

    fn claim_state_file(&mut self, artifact: &Value) -> bool {
        match artifact.get("url").and_then(Value::as_str) {
            Some(url) if self.enc.custom_file_urls.contains(url) => {
                tracing::warn!(run_id = %LogId(&self.enc.run_id), "file already announced via CUSTOM: artifact dropped");
                false
            }
            Some(url) => self.enc.state_file_urls.insert(url.to_owned()),
            None => true,
        }
    }
}
