//! Checks of `infra/aws/template.yaml` that neither cfn-lint nor `sam validate --lint` makes:
//! a function URL that buffers (`InvokeMode: BUFFERED`, the default) would hold every frame
//! until the turn ends and miss Console's 10-second first-frame deadline.

use std::path::PathBuf;

fn template() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/aws/template.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the YAML block opened by the line `key:` (more indented than it).
fn blocks<'a>(text: &'a str, key: &str) -> Vec<Vec<&'a str>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != format!("{key}:") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        out.push(body);
    }
    out
}

fn value<'a>(block: &[&'a str], key: &str) -> Option<&'a str> {
    block
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{key}:")).map(str::trim))
}

#[test]
fn function_url_streams() {
    let t = template();
    let urls = blocks(&t, "FunctionUrlConfig");
    assert_eq!(urls.len(), 1, "one function URL");
    for url in urls {
        assert_eq!(
            value(&url, "InvokeMode"),
            Some("RESPONSE_STREAM"),
            "{url:?}"
        );
        assert_eq!(
            value(&url, "AuthType"),
            Some("NONE"),
            "Console cannot sign requests: {url:?}"
        );
    }
}

#[test]
fn function_is_built_and_sized_as_the_issue_says() {
    let t = template();
    let props = blocks(&t, "Properties")
        .into_iter()
        .find(|b| value(b, "Handler") == Some("bootstrap"))
        .expect("the function's properties");
    assert_eq!(value(&props, "Runtime"), Some("provided.al2023"));
    assert!(props.contains(&"- arm64"), "arm64: {props:?}");
    let memory: u32 = value(&props, "MemorySize").unwrap().parse().unwrap();
    assert!((128..=256).contains(&memory), "memory {memory}");
    let timeout: u32 = value(&props, "Timeout").unwrap().parse().unwrap();
    let deadline = blocks(&t, "TurnDeadlineSeconds")
        .into_iter()
        .find_map(|b| value(&b, "MaxValue").map(|v| v.parse::<u32>().unwrap()))
        .expect("TurnDeadlineSeconds has a MaxValue");
    assert!(
        timeout > deadline + 10,
        "the function timeout ({timeout} s) must leave room after the longest turn deadline ({deadline} s) for the final store write"
    );
    let meta = blocks(&t, "Metadata")
        .into_iter()
        .find(|b| value(b, "BuildMethod").is_some())
        .expect("build metadata");
    assert_eq!(value(&meta, "BuildMethod"), Some("rust-cargolambda"));
    assert_eq!(value(&meta, "Binary"), Some("bootstrap"));
}

#[test]
fn table_is_on_demand_with_ttl_on_the_attribute_the_store_writes() {
    let t = template();
    assert!(t.contains("BillingMode: PAY_PER_REQUEST"));
    let ttl = blocks(&t, "TimeToLiveSpecification").remove(0);
    assert_eq!(value(&ttl, "AttributeName"), Some("expires_at"));
    assert_eq!(value(&ttl, "Enabled"), Some("true"));
}

#[test]
fn turn_deadline_leaves_room_before_consoles_five_minutes() {
    let t = template();
    let deadline = blocks(&t, "TurnDeadlineSeconds").remove(0);
    let max: u32 = value(&deadline, "MaxValue").unwrap().parse().unwrap();
    let default: u32 = value(&deadline, "Default").unwrap().parse().unwrap();
    assert!(max <= 280, "TurnDeadlineSeconds MaxValue {max} > 280");
    assert!(default <= max, "default {default} above MaxValue {max}");
}

/// Throttled invocations and function errors (what a failed init, say an unreadable SSM
/// parameter, produces on every cold start) each raise an alarm on the function, notifying
/// the alarm topic when one is given.
#[test]
fn throttles_and_errors_raise_alarms_on_the_function() {
    let t = template();
    for metric in ["Throttles", "Errors"] {
        let alarm = blocks(&t, "Properties")
            .into_iter()
            .find(|b| value(b, "MetricName") == Some(metric))
            .unwrap_or_else(|| panic!("an alarm on the {metric} metric"));
        assert_eq!(value(&alarm, "Namespace"), Some("AWS/Lambda"), "{metric}");
        assert!(
            alarm.contains(&"Value: !Ref Function"),
            "{metric}: {alarm:?}"
        );
        assert_eq!(
            value(&alarm, "TreatMissingData"),
            Some("notBreaching"),
            "{metric}"
        );
        assert_eq!(value(&alarm, "Threshold"), Some("1"), "{metric}");
        assert!(
            value(&alarm, "AlarmActions").is_some_and(|a| a.contains("AlarmTopicArn")),
            "{metric}: {alarm:?}"
        );
    }
}

/// The comments say what the numbers are: the timeout's comment names the turn deadline's real
/// maximum, not an older one.
#[test]
fn the_timeout_comment_names_the_real_turn_deadline_maximum() {
    let t = template();
    let max = blocks(&t, "TurnDeadlineSeconds")
        .remove(0)
        .iter()
        .find_map(|l| l.strip_prefix("MaxValue:").map(|v| v.trim().to_owned()))
        .expect("MaxValue");
    let lines: Vec<&str> = t.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim().starts_with("Timeout:"))
        .expect("Timeout");
    let comment: String = lines[..at]
        .iter()
        .rev()
        .take_while(|l| l.trim().starts_with('#'))
        .copied()
        .collect();
    assert!(
        comment.contains(&format!("{max} s")),
        "the Timeout comment does not name the deadline's maximum ({max} s): {comment}"
    );
}

/// `sam build` with `BuildMethod: rust-cargolambda` is a SAM beta feature: without
/// `beta_features = true` in samconfig.toml it stops to ask, so it cannot run unattended.
#[test]
fn sam_build_enables_the_beta_feature_without_asking() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/aws/samconfig.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut section = String::new();
    let mut build_beta = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
        } else if section == "[default.build.parameters]"
            && line.replace(' ', "") == "beta_features=true"
        {
            build_beta = true;
        }
    }
    assert!(build_beta, "samconfig.toml:\n{text}");
}

/// The limit-refusals alarm reads a series the EMF line publishes at every `MetricsDetail`
/// (`Turns` with `outcomeClass = refused`), and the parameter offers exactly the values the
/// function accepts, passed as `RUNWAY_METRICS_DETAIL`.
#[test]
fn the_limit_refusals_alarm_reads_a_series_every_metrics_detail_publishes() {
    use runway_lambda::emf::{EmfLine, METRICS_DETAIL_SETTING, MetricsDetail};
    let t = template();
    let alarm = blocks(&t, "Properties")
        .into_iter()
        .find(|b| value(b, "AlarmName").is_some_and(|n| n.contains("limit-refusals")))
        .expect("LimitRefusalsAlarm");
    assert_eq!(value(&alarm, "Namespace"), Some("!Ref MetricsNamespace"));
    assert_eq!(value(&alarm, "MetricName"), Some("Turns"));
    assert!(alarm.contains(&"- Name: outcomeClass"), "{alarm:?}");
    assert!(alarm.contains(&"Value: refused"), "{alarm:?}");

    let parameter = blocks(&t, "MetricsDetail").remove(0);
    assert_eq!(value(&parameter, "Default"), Some("pilot"));
    assert_eq!(value(&parameter, "AllowedValues"), Some("[pilot, worker]"));
    assert!(t.contains(&format!("{METRICS_DETAIL_SETTING}: !Ref MetricsDetail")));

    for detail in ["pilot", "worker"] {
        let detail: MetricsDetail = detail.parse().expect("an allowed value parses");
        for outcome in ["RATE_LIMITED", "QUOTA_EXCEEDED"] {
            let report = runway_core::meter::TurnReport {
                protocol: "console",
                run_id: "r".into(),
                thread_id: "t".into(),
                worker: "w".into(),
                worker_name: None,
                workspace: "s".into(),
                outcome,
                started_at_ms: 0,
                first_frame_ms: None,
                duration_ms: 1,
                usage: Default::default(),
            };
            let doc = EmfLine::new("runway").with_detail(detail).document(&report);
            assert_eq!(doc["outcomeClass"], "refused");
            let reads_it = doc["_aws"]["CloudWatchMetrics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| {
                    d["Dimensions"]
                        .as_array()
                        .unwrap()
                        .contains(&serde_json::json!(["outcomeClass"]))
                        && d["Metrics"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|m| m["Name"] == "Turns")
                });
            assert!(reads_it, "{detail}, {outcome}: {doc}");
        }
    }
}

#[test]
fn the_vault_key_is_read_from_its_ssm_parameter_with_least_privilege() {
    let t = template();
    let parameter = blocks(&t, "VaultKeyParameterName");
    assert!(!parameter.is_empty(), "a VaultKeyParameterName parameter");
    assert_eq!(value(&parameter[0], "NoEcho"), Some("true"));
    assert_eq!(value(&parameter[0], "Default"), Some("\"\""));
    let env = blocks(&t, "Variables");
    assert_eq!(
        value(&env[0], "RUNWAY_VAULT_KEY_SSM_PARAMETER"),
        Some("!Ref VaultKeyParameterName")
    );
    // Read only when set, and only that parameter.
    assert!(t.contains("HasVaultKey: !Not [!Equals [!Ref VaultKeyParameterName, \"\"]]"));
    assert!(t.contains(
        "Resource: !Sub arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${VaultKeyParameterName}"
    ));
}
