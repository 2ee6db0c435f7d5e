//! Every AWS operation the Lambda code calls (`lambda/src`, which a `runway new` crate's
//! `bootstrap` runs too) is allowed by the function's policy, in runway's SAM template and in
//! the one `runway new` writes, and nothing else is: derived from the code's calls and the SDK
//! crates' own operation lists (`runway_e2e::iam_policy`). moto does not check IAM, so without
//! this an action missing from the policy shows only on AWS, as AccessDenied.

use std::path::PathBuf;

use runway_e2e::generated_crate::GeneratedCrate;
use runway_e2e::iam_policy::{calls_in, policy_problems, rust_sources, sdk_operations};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("workspace dir")
}

#[test]
fn the_scan_finds_the_lambda_codes_calls() {
    let services = sdk_operations(&workspace());
    assert!(
        services
            .get("dynamodb")
            .is_some_and(|o| o.contains("get_item")),
        "the SDK crates' operations: {:?}",
        services.keys().collect::<Vec<_>>()
    );
    let calls = calls_in(&rust_sources(&workspace().join("lambda/src")), &services);
    let ops: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.service.as_str(), c.operation.as_str()))
        .collect();
    for expected in [
        ("dynamodb", "put_item"),
        ("dynamodb", "update_item"),
        ("dynamodb", "get_item"),
        ("dynamodb", "query"),
        ("dynamodb", "batch_get_item"),
        // Signed and sent by lambda/src/ssm_request.rs, without SSM's SDK crate.
        ("ssm", "get_parameter"),
    ] {
        assert!(
            ops.contains(&expected),
            "{expected:?} not found in {calls:#?}"
        );
    }
}

/// Panics listing what `policy_problems` finds wrong with the template at `path`.
fn assert_exact_policy(label: &str, path: &std::path::Path) {
    let template = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{label}: {e}"));
    let problems = policy_problems(
        &template,
        &rust_sources(&workspace().join("lambda/src")),
        &sdk_operations(&workspace()),
    );
    assert!(problems.is_empty(), "{label}:\n{}", problems.join("\n"));
}

#[test]
fn runways_template_allows_exactly_what_the_lambda_code_calls() {
    assert_exact_policy(
        "infra/aws/template.yaml",
        &workspace().join("infra/aws/template.yaml"),
    );
}

#[test]
fn a_runway_new_crates_template_allows_exactly_what_the_lambda_code_calls() {
    let generated = GeneratedCrate::create("iam-check");
    assert_exact_policy(
        "the generated template.yaml",
        &generated.path().join("template.yaml"),
    );
}
