//! Rules 6 and 8: state carries only the keys Console accepts (`STATE_KEY_DROPPED`), and a
//! file is announced on one channel only, a state artifact or `CUSTOM` `file`
//! (`DUPLICATE_FILE_CHANNEL`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{FrameRules, Out, STATE_KEYS};
use crate::findings::Code;

impl FrameRules {
    /// `STATE_SNAPSHOT`: its keys, and the files among its artifacts.
    pub(super) fn state_snapshot(&mut self, at: &str, frame: &Map<String, Value>, out: &mut Out) {
        if let Some(Value::Object(snapshot)) = frame.get("snapshot") {
            self.state_keys(at, snapshot.keys().map(String::as_str), out);
            if snapshot.keys().any(|k| STATE_KEYS.contains(&k.as_str())) {
                self.visible = true;
            }
            if let Some(artifacts) = snapshot.get("artifacts") {
                let mut urls = BTreeSet::new();
                collect_urls(artifacts, &mut urls);
                self.add_file_urls(at, urls, true, out);
            }
        }
    }

    /// `CUSTOM`: shown to the user; a `file` is one of the turn's files.
    pub(super) fn custom(&mut self, at: &str, frame: &Map<String, Value>, out: &mut Out) {
        self.visible = true;
        if frame.get("name").and_then(Value::as_str) == Some("file") {
            let mut urls = BTreeSet::new();
            collect_urls(frame.get("value").unwrap_or(&Value::Null), &mut urls);
            self.add_file_urls(at, urls, false, out);
        }
    }

    fn state_keys<'a>(&mut self, at: &str, keys: impl Iterator<Item = &'a str>, out: &mut Out) {
        let dropped: Vec<&str> = keys.filter(|k| !STATE_KEYS.contains(k)).collect();
        if !dropped.is_empty() {
            out.push(
                Code::StateKeyDropped,
                format!(
                    "{at}: state key(s) {} dropped: only todos, artifacts and files are accepted",
                    dropped.join(", ")
                ),
            );
        }
    }

    pub(super) fn state_delta(&mut self, at: &str, delta: &Value, out: &mut Out) {
        match delta {
            Value::Array(ops) => {
                let mut keys = Vec::new();
                let mut urls = BTreeSet::new();
                for op in ops {
                    let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                    let first = path
                        .trim_start_matches('/')
                        .split('/')
                        .next()
                        .unwrap_or("")
                        .replace("~1", "/")
                        .replace("~0", "~");
                    if first.is_empty() {
                        if let Some(Value::Object(root)) = op.get("value") {
                            keys.extend(root.keys().cloned());
                            if let Some(a) = root.get("artifacts") {
                                collect_urls(a, &mut urls);
                            }
                        }
                    } else {
                        if first == "artifacts"
                            && let Some(v) = op.get("value")
                        {
                            collect_urls(v, &mut urls);
                        }
                        keys.push(first);
                    }
                }
                if keys.iter().any(|k| STATE_KEYS.contains(&k.as_str())) {
                    self.visible = true;
                }
                self.state_keys(at, keys.iter().map(String::as_str), out);
                self.add_file_urls(at, urls, true, out);
            }
            Value::Object(map) => {
                if map.keys().any(|k| STATE_KEYS.contains(&k.as_str())) {
                    self.visible = true;
                }
                self.state_keys(at, map.keys().map(String::as_str), out);
                if let Some(a) = map.get("artifacts") {
                    let mut urls = BTreeSet::new();
                    collect_urls(a, &mut urls);
                    self.add_file_urls(at, urls, true, out);
                }
            }
            _ => {}
        }
    }

    fn add_file_urls(&mut self, at: &str, urls: BTreeSet<String>, artifacts: bool, out: &mut Out) {
        for url in urls {
            let other = if artifacts {
                &self.custom_file_urls
            } else {
                &self.artifact_urls
            };
            if other.contains(&url) && self.duplicate_urls.insert(url.clone()) {
                out.push(
                    Code::DuplicateFileChannel,
                    format!("{at}: file {url} sent both as a STATE_SNAPSHOT artifact and as CUSTOM name=file: the user sees two cards (one file, one channel)"),
                );
            }
            if artifacts {
                self.artifact_urls.insert(url);
            } else {
                self.custom_file_urls.insert(url);
            }
        }
    }
}

/// Collects the string values of every `url` key, at any depth.
fn collect_urls(v: &Value, urls: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                match (k.as_str(), val) {
                    ("url", Value::String(u)) => {
                        urls.insert(u.clone());
                    }
                    _ => collect_urls(val, urls),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_urls(i, urls)),
        _ => {}
    }
}
