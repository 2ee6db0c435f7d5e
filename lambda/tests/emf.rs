//! The EMF line of a turn against the Embedded Metric Format's structure (schema written from
//! the specification) and its reference rules: every dimension a string member of the root,
//! every metric a numeric member.

use runway_core::meter::TurnReport;
use runway_core::store::tally::Tally;
use std::collections::BTreeSet;

use runway_lambda::emf::{EmfLine, METRICS_DETAIL_SETTING};
use runway_lambda::{Settings, emf_line};
use serde_json::Value;

fn report(first_frame_ms: Option<u64>) -> TurnReport {
    TurnReport {
        protocol: "console",
        run_id: "01K5BH5PSX926W6RZ6YR1P8WWV".into(),
        thread_id: "918273645500123456".into(),
        worker: "918273688800000200".into(),
        worker_name: Some("Order desk".into()),
        workspace: "918273600000000001".into(),
        outcome: "RATE_LIMITED",
        started_at_ms: 1_800_000_000_000,
        first_frame_ms,
        duration_ms: 42,
        usage: Tally {
            turns: 1,
            rate_limited: 1,
            input_tokens: 21,
            output_tokens: 9,
            cost_micro_usd: 9,
            ..Tally::default()
        },
    }
}

#[test]
fn the_line_is_an_emf_document() {
    let schema: Value =
        serde_json::from_str(include_str!("fixtures/emf.schema.json")).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    for first in [None, Some(12)] {
        let doc = EmfLine::new("runway").document(&report(first));
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{doc}");
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(
            directive["Dimensions"],
            serde_json::json!([["outcomeClass"]])
        );
        let mut names = Vec::new();
        for directive in doc["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
            for set in directive["Dimensions"].as_array().unwrap() {
                for key in set.as_array().unwrap() {
                    assert!(
                        doc[key.as_str().unwrap()].is_string(),
                        "dimension {key}: {doc}"
                    );
                }
            }
            for m in directive["Metrics"].as_array().unwrap() {
                names.push(m["Name"].as_str().unwrap());
            }
        }
        for name in &names {
            assert!(doc[name].is_number(), "metric {name}: {doc}");
        }
        assert_eq!(names.contains(&"FirstFrameMs"), first.is_some());
        assert_eq!(doc["Turns"], 1);
        assert_eq!(doc["outcomeClass"], "refused");
        assert_eq!(doc["outcome"], "RATE_LIMITED");
        assert_eq!(doc["Tokens"], 30);
        assert_eq!(doc["_aws"]["Timestamp"], 1_800_000_000_042u64);
        // One line: nothing but the JSON object, and small (BENCHMARKS.md prices ~1 KB of
        // logs per turn with it).
        let line = EmfLine::new("runway").line(&report(first));
        assert!(!line.contains('\n'));
        assert!(line.len() < 1024, "{} bytes: {line}", line.len());
    }
    // A schema that cannot fail is no check: a document missing its Timestamp is refused.
    let mut bad = EmfLine::new("runway").document(&report(None));
    bad["_aws"].as_object_mut().unwrap().remove("Timestamp");
    assert!(!validator.is_valid(&bad));
}

/// One CloudWatch metric series: namespace, metric name, and its dimensions with their values.
type Series = (String, String, Vec<(String, String)>);

/// The series an EMF line publishes, read from the line as CloudWatch Logs would.
fn series_of(line: &str) -> Vec<Series> {
    let doc: Value = serde_json::from_str(line).expect("one JSON object per line");
    let mut out = Vec::new();
    for directive in doc["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
        let namespace = directive["Namespace"].as_str().unwrap().to_owned();
        for set in directive["Dimensions"].as_array().unwrap() {
            let mut dimensions: Vec<(String, String)> = set
                .as_array()
                .unwrap()
                .iter()
                .map(|k| {
                    let k = k.as_str().unwrap();
                    (k.to_owned(), doc[k].as_str().unwrap().to_owned())
                })
                .collect();
            dimensions.sort();
            for m in directive["Metrics"].as_array().unwrap() {
                let name = m["Name"].as_str().unwrap().to_owned();
                out.push((namespace.clone(), name, dimensions.clone()));
            }
        }
    }
    out
}

/// A scripted pilot: 5 workers × 20 workspaces × 4 outcomes (two turns each: with and without
/// a first frame), through the EMF line the Lambda adapter builds from its settings.
fn pilot_series(env: &[(&str, &str)]) -> BTreeSet<Series> {
    let settings = Settings::from_lookup(|k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("settings");
    let emf = emf_line(&settings);
    let mut all = BTreeSet::new();
    let mut turns = 0;
    for worker in 0..5 {
        for workspace in 0..20 {
            for outcome in ["SUCCESS", "INTERRUPT", "RATE_LIMITED", "AGENT_ERROR"] {
                for first in [Some(40 + workspace), None] {
                    let mut r = report(first);
                    r.worker = format!("91827368880000{worker:04}");
                    r.workspace = format!("91827360000000{workspace:04}");
                    r.outcome = outcome;
                    r.run_id = format!("run-{turns}");
                    turns += 1;
                    all.extend(series_of(&emf.line(&r)));
                }
            }
        }
    }
    assert_eq!(turns, 800);
    all
}

#[test]
fn a_pilot_publishes_at_most_four_metric_series_by_default() {
    let series = pilot_series(&[]);
    assert!(series.len() <= 4, "{} series: {series:#?}", series.len());
    let names: BTreeSet<&str> = series.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["FirstFrameMs", "Turns"]));
    // What LimitRefusalsAlarm reads is among them.
    assert!(series.contains(&(
        "runway".into(),
        "Turns".into(),
        vec![("outcomeClass".into(), "refused".into())]
    )));
    assert_eq!(series, pilot_series(&[(METRICS_DETAIL_SETTING, "pilot")]));
}

#[test]
fn per_worker_metrics_only_when_asked_and_bounded_by_workers_not_workspaces() {
    let series = pilot_series(&[
        (METRICS_DETAIL_SETTING, "worker"),
        ("RUNWAY_METRICS_NAMESPACE", "pilot-a"),
    ]);
    // The pilot's 4, plus 7 metrics × 3 outcome classes × 5 workers; never per workspace.
    assert_eq!(series.len(), 4 + 7 * 3 * 5, "{series:#?}");
    assert!(series.iter().all(|s| s.0 == "pilot-a"));
    assert!(series.iter().all(|s| {
        s.2.iter()
            .all(|(k, _)| k == "worker" || k == "outcomeClass")
    }));
}
