//! The EMF line of a turn against the Embedded Metric Format's structure (schema written from
//! the specification) and its reference rules: every dimension a string member of the root,
//! every metric a numeric member.

use runway_core::meter::TurnReport;
use runway_core::store::tally::Tally;
use runway_lambda::emf::EmfLine;
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
            serde_json::json!([["worker", "outcome"], ["outcome"]])
        );
        for set in directive["Dimensions"].as_array().unwrap() {
            for key in set.as_array().unwrap() {
                assert!(
                    doc[key.as_str().unwrap()].is_string(),
                    "dimension {key}: {doc}"
                );
            }
        }
        let names: Vec<&str> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        for name in &names {
            assert!(doc[name].is_number(), "metric {name}: {doc}");
        }
        assert_eq!(names.contains(&"FirstFrameMs"), first.is_some());
        assert_eq!(doc["Turns"], 1);
        assert_eq!(doc["outcome"], "RATE_LIMITED");
        assert_eq!(doc["Tokens"], 30);
        assert_eq!(doc["_aws"]["Timestamp"], 1_800_000_000_042u64);
        // One line: nothing but the JSON object.
        assert!(!doc.to_string().contains('\n'));
    }
    // A schema that cannot fail is no check: a document missing its Timestamp is refused.
    let mut bad = EmfLine::new("runway").document(&report(None));
    bad["_aws"].as_object_mut().unwrap().remove("Timestamp");
    assert!(!validator.is_valid(&bad));
}
