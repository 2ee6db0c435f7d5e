//! Lowkey's JSON Schema (`infra/lowkey/schema/`) and request fixtures, for the tests that
//! hold the parser and both writers' output to it: core's unit tests include this file by
//! path, its integration tests as a module.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

pub fn lowkey_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/lowkey")
}

pub fn schema() -> Value {
    let text =
        std::fs::read_to_string(lowkey_dir().join("schema/external-turn-protocol.schema.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

pub fn request_validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).unwrap()
}

pub fn event_validator() -> jsonschema::Validator {
    let root = schema();
    let event = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": root["$defs"],
        "$ref": "#/$defs/ExternalAgentTurnEvent",
    });
    jsonschema::draft202012::new(&event).unwrap()
}

pub fn fixtures(kind: &str) -> BTreeMap<String, Value> {
    let dir = lowkey_dir().join("fixtures/requests").join(kind);
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "errors" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        out.insert(name, serde_json::from_str(&text).unwrap());
    }
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

/// Parses NDJSON, checking every line is one schema-valid event echoing protocolVersion 1.
pub fn events(ndjson: &str) -> Vec<Value> {
    assert!(
        ndjson.is_empty() || ndjson.ends_with('\n'),
        "unterminated line"
    );
    let v = event_validator();
    ndjson
        .lines()
        .map(|line| {
            let e: Value = serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}"));
            let errors: Vec<String> = v.iter_errors(&e).map(|er| er.to_string()).collect();
            assert!(errors.is_empty(), "{line} breaks the schema: {errors:?}");
            assert_eq!(e["protocolVersion"], 1);
            e
        })
        .collect()
}

/// `type` or `type:status` per event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["status"].as_str() {
            Some(s) => format!("status:{s}"),
            None => e["type"].as_str().unwrap().to_owned(),
        })
        .collect()
}

pub fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}
