//! The IAM policy a SAM template gives runway's Lambda function, against the AWS calls the
//! Lambda code makes: derived from the code, never from a hand-kept list of actions.
//!
//! - [`sdk_operations`] reads every operation each AWS SDK crate in the build offers (its
//!   `src/operation/` modules, located with `cargo metadata`).
//! - [`calls_in`] finds the SDK operations the sources call: a zero-argument method call whose
//!   name is one of those operations (`self.client.batch_get_item()`), outside comments and
//!   string literals; and the operations the code calls without an SDK crate, as a request of
//!   AWS's JSON protocol it makes itself: a string literal naming the action's
//!   `X-Amz-Target` (`"AmazonSSM.GetParameter"`, [`JSON_TARGETS`]).
//! - [`required_actions`] turns them into IAM actions: `service:PascalCaseName`, except where
//!   AWS authorises an operation by other actions (a DynamoDB transaction needs the action of
//!   each kind of item it writes, found from the item builders in the code; reading a
//!   SecureString with decryption needs `kms:Decrypt` when a customer key encrypts it).
//! - [`policy_statements`] reads the template's `Policies` (a small YAML reader for the block
//!   style SAM templates are written in; CloudFormation tags are kept as text).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Operation names (snake_case, as the SDK's fluent client methods) of each AWS service whose
/// SDK crate is in the build, keyed by the IAM service prefix (`dynamodb`, `ssm`).
pub type ServiceOperations = BTreeMap<String, BTreeSet<String>>;

/// Every operation of every `aws-sdk-*` crate in the workspace's build, from the crate sources
/// `cargo metadata` locates.
///
/// # Panics
/// If `cargo metadata` fails or an SDK crate has no `src/operation` directory.
pub fn sdk_operations(workspace: &Path) -> ServiceOperations {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(workspace.join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut services = ServiceOperations::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        let Some(service) = name.strip_prefix("aws-sdk-") else {
            continue;
        };
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default());
        let dir = manifest.parent().expect("crate dir").join("src/operation");
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{name}: cannot list {}: {e}", dir.display()));
        let operations = services.entry(service.to_owned()).or_default();
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            operations.insert(file.trim_end_matches(".rs").to_owned());
        }
    }
    services
}

/// One SDK operation called in the sources.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SdkCall {
    /// IAM service prefix (`dynamodb`).
    pub service: String,
    /// The operation, as the SDK method (`batch_get_item`).
    pub operation: String,
    /// Where (`store.rs:137`).
    pub at: String,
}

/// Rust source with comments and the contents of string and char literals blanked out (lines
/// kept), so a call in a comment or a string counts for nothing.
pub fn code_only(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let keep_newlines = |s: &[u8], out: &mut Vec<u8>| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            keep_newlines(&b[i..end], &mut out);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let end = find_from(b, i + 2, b"*/").map_or(b.len(), |p| p + 2);
            keep_newlines(&b[i..end], &mut out);
            i = end;
        } else if b[i] == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && is_raw_start(b, i) {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + 2 + hashes;
            let end = find_from(b, body, &close).map_or(b.len(), |p| p + close.len());
            keep_newlines(&b[i..end], &mut out);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            keep_newlines(&b[i..end], &mut out);
            i = end;
        } else if b[i] == b'\'' && char_literal_len(&b[i..]).is_some() {
            let n = char_literal_len(&b[i..]).unwrap_or(1);
            keep_newlines(&b[i..i + n], &mut out);
            i += n;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find_from(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// `r"…"` / `r#"…"#` starts here (not the end of an identifier such as `for"`).
fn is_raw_start(b: &[u8], i: usize) -> bool {
    let after_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    !after_ident && b.get(i + 1 + hashes) == Some(&b'"')
}

/// The length of a char literal at the start of `b` (`'a'`, `'\n'`, `'\u{1F600}'`), or `None`
/// for a lifetime (`'a`).
fn char_literal_len(b: &[u8]) -> Option<usize> {
    if b.get(1) == Some(&b'\\') {
        let close = b.iter().skip(2).position(|&c| c == b'\'')?;
        return (close < 12).then_some(close + 3);
    }
    let rest = std::str::from_utf8(&b[1..b.len().min(6)])
        .ok()
        .or_else(|| {
            (1..b.len().min(6))
                .rev()
                .find_map(|n| std::str::from_utf8(&b[1..n]).ok())
        })?;
    let c = rest.chars().next()?;
    (b.get(1 + c.len_utf8()) == Some(&b'\'')).then_some(2 + c.len_utf8())
}

/// Every zero-argument method call in `code` (already [`code_only`]): `(name, line)`.
fn method_calls(code: &str) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let mut calls = Vec::new();
    for (i, _) in code.match_indices('.') {
        let name: String = code[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let after = &b[i + 1 + name.len()..];
        let after = std::str::from_utf8(after).unwrap_or_default().trim_start();
        if after.starts_with('(') && after[1..].trim_start().starts_with(')') {
            let line = code[..i].matches('\n').count() + 1;
            calls.push((name, line));
        }
    }
    calls
}

/// The `X-Amz-Target` prefix of each service whose JSON-protocol requests the code may make
/// itself, and the service's IAM prefix.
pub const JSON_TARGETS: &[(&str, &str)] =
    &[("AmazonSSM.", "ssm"), ("DynamoDB_20120810.", "dynamodb")];

/// The operations named as `X-Amz-Target` string literals (`"AmazonSSM.GetParameter"`) in
/// `text`, outside comments: `(service, snake_case operation, line)`.
fn json_target_calls(text: &str) -> Vec<(String, String, usize)> {
    let mut calls = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for (prefix, service) in JSON_TARGETS {
            let quoted = format!("\"{prefix}");
            for (i, _) in code.match_indices(&quoted) {
                let rest = &code[i + quoted.len()..];
                let action: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                if action.is_empty() || !rest[action.len()..].starts_with('"') {
                    continue;
                }
                calls.push(((*service).to_owned(), snake_case(&action), n + 1));
            }
        }
    }
    calls
}

/// `GetParameter` → `get_parameter`.
fn snake_case(pascal: &str) -> String {
    let mut out = String::new();
    for (i, c) in pascal.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The AWS operations `sources` (`(file name, text)`) call: through an SDK crate, or as a
/// JSON-protocol request the code makes itself.
///
/// # Panics
/// If an operation name belongs to two services' SDKs: the scan cannot tell which one is
/// meant.
pub fn calls_in(sources: &[(String, String)], services: &ServiceOperations) -> Vec<SdkCall> {
    let mut calls = BTreeSet::new();
    for (file, text) in sources {
        for (name, line) in method_calls(&code_only(text)) {
            let owners: Vec<&String> = services
                .iter()
                .filter(|(_, ops)| ops.contains(&name))
                .map(|(service, _)| service)
                .collect();
            assert!(
                owners.len() <= 1,
                "{file}:{line}: `{name}` is an operation of {owners:?}: cannot tell which"
            );
            if let Some(service) = owners.first() {
                calls.insert(SdkCall {
                    service: (*service).clone(),
                    operation: name,
                    at: format!("{file}:{line}"),
                });
            }
        }
        for (service, operation, line) in json_target_calls(text) {
            calls.insert(SdkCall {
                service,
                operation,
                at: format!("{file}:{line}"),
            });
        }
    }
    calls.into_iter().collect()
}

/// `batch_get_item` → `BatchGetItem`.
pub fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// An IAM action the code needs, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Required {
    /// `dynamodb:BatchGetItem`.
    pub action: String,
    /// Where the code needs it.
    pub because: String,
}

/// The IAM actions the calls need. `sources` are searched for what some operations are
/// authorised by: the items a DynamoDB transaction writes (`Put::builder()`, …), and whether a
/// parameter is read with decryption.
///
/// # Panics
/// On an operation whose IAM actions depend on statements this scan does not read (PartiQL).
pub fn required_actions(calls: &[SdkCall], sources: &[(String, String)]) -> BTreeSet<Required> {
    let code: String = sources
        .iter()
        .map(|(_, t)| code_only(t))
        .collect::<Vec<_>>()
        .join("\n");
    let squeezed: String = code.split_whitespace().collect();
    // With the string literals: a JSON request body the code writes itself.
    let raw: String = sources
        .iter()
        .flat_map(|(_, t)| t.split_whitespace())
        .collect();
    let decrypts =
        squeezed.contains(".with_decryption(true)") || raw.contains("\"WithDecryption\":true");
    let mut out = BTreeSet::new();
    for call in calls {
        let because = format!("{} calls {}", call.at, call.operation);
        let mut need = |action: String| {
            out.insert(Required {
                action,
                because: because.clone(),
            });
        };
        match (call.service.as_str(), call.operation.as_str()) {
            ("dynamodb", "transact_write_items") => {
                // Authorised per item: the action of each kind of item the code builds.
                let kinds = [
                    ("Put", "PutItem"),
                    ("Update", "UpdateItem"),
                    ("Delete", "DeleteItem"),
                    ("ConditionCheck", "ConditionCheckItem"),
                ];
                let mut any = false;
                for (builder, action) in kinds {
                    if has_builder(&squeezed, builder) {
                        need(format!("dynamodb:{action}"));
                        any = true;
                    }
                }
                assert!(any, "{because}, but no transaction item builder was found");
            }
            ("dynamodb", "transact_get_items") => need("dynamodb:GetItem".into()),
            (
                "dynamodb",
                op @ ("execute_statement" | "batch_execute_statement" | "execute_transaction"),
            ) => {
                panic!(
                    "{} calls {op}: PartiQL is authorised per statement kind; map it here",
                    call.at
                )
            }
            ("ssm", op @ ("get_parameter" | "get_parameters" | "get_parameters_by_path")) => {
                need(format!("ssm:{}", pascal_case(op)));
                if decrypts {
                    // A SecureString under a customer-managed key; the AWS-managed aws/ssm key
                    // needs no grant in the function's policy.
                    need("kms:Decrypt".into());
                }
            }
            (service, op) => need(format!("{service}:{}", pascal_case(op))),
        }
    }
    out
}

/// `Name::builder()` appears (as `Name::builder()` or `types::Name::builder()`), not as the
/// tail of a longer name (`PutRequest::builder()`).
fn has_builder(squeezed: &str, name: &str) -> bool {
    let needle = format!("{name}::builder()");
    squeezed.match_indices(&needle).any(|(i, _)| {
        squeezed[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// The `RUNWAY_*_SSM_PARAMETER` settings the sources read (string literals naming them).
pub fn ssm_parameter_settings(sources: &[(String, String)]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, text) in sources {
        for (i, _) in text.match_indices("\"RUNWAY_") {
            let name: String = text[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if name.ends_with("_SSM_PARAMETER") && text[i + 1 + name.len()..].starts_with('"') {
                out.insert(name);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The template

/// A node of the YAML subset SAM templates are written in (block style; tags kept as text).
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// `key: value` pairs, in order.
    Map(Vec<(String, Yaml)>),
    /// `- item` entries.
    Seq(Vec<Yaml>),
    /// Everything else, as written (`!GetAtt Table.Arn`, `[a, b]`, a folded block's text).
    Scalar(String),
}

impl Yaml {
    /// The value under `key`, for a map.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The scalar's text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// A sequence's items, a scalar as one item.
    pub fn items(&self) -> Vec<&Yaml> {
        match self {
            Yaml::Seq(items) => items.iter().collect(),
            other => vec![other],
        }
    }
}

struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// Parses a YAML document in block style.
pub fn parse_yaml(text: &str) -> Yaml {
    let lines: Vec<Line> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| Line {
            indent: l.len() - l.trim_start().len(),
            text: strip_comment(l.trim()),
        })
        .collect();
    let mut at = 0;
    parse_block(&lines, &mut at, 0)
}

/// A trailing ` # comment` removed (outside quotes).
fn strip_comment(s: &str) -> &str {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i > 0 && s[..i].ends_with(' ') => return s[..i].trim_end(),
            _ => {}
        }
    }
    s
}

fn parse_block(lines: &[Line], at: &mut usize, indent: usize) -> Yaml {
    if *at < lines.len() && lines[*at].indent >= indent && lines[*at].text.starts_with("- ")
        || (*at < lines.len() && lines[*at].text == "-")
    {
        let seq_indent = lines[*at].indent;
        let mut items = Vec::new();
        while *at < lines.len()
            && lines[*at].indent == seq_indent
            && (lines[*at].text.starts_with("- ") || lines[*at].text == "-")
        {
            let rest = lines[*at].text.trim_start_matches('-').trim_start();
            // The item's content sits two columns in: parse it as if it were its own line.
            let inner = seq_indent + 2;
            if rest.is_empty() {
                *at += 1;
                items.push(parse_block(lines, at, inner));
            } else if is_key(rest) {
                let mut synthetic: Vec<Line> = vec![Line {
                    indent: inner,
                    text: rest,
                }];
                let start = *at + 1;
                let mut end = start;
                while end < lines.len() && lines[end].indent >= inner {
                    end += 1;
                }
                synthetic.extend(lines[start..end].iter().map(|l| Line {
                    indent: l.indent,
                    text: l.text,
                }));
                let mut i = 0;
                items.push(parse_block(&synthetic, &mut i, inner));
                *at = end;
            } else {
                *at += 1;
                items.push(Yaml::Scalar(rest.to_owned()));
                // A tag's nested block (`- !If` then its items) belongs to the item.
                if *at < lines.len() && lines[*at].indent > seq_indent {
                    let nested = parse_block(lines, at, seq_indent + 1);
                    items.pop();
                    items.push(Yaml::Map(vec![(rest.to_owned(), nested)]));
                }
            }
        }
        return Yaml::Seq(items);
    }
    let mut pairs = Vec::new();
    let map_indent = lines.get(*at).map_or(indent, |l| l.indent);
    while *at < lines.len() && lines[*at].indent == map_indent && is_key(lines[*at].text) {
        let text = lines[*at].text;
        let (key, value) = text.split_once(':').expect("a key");
        let value = value.trim();
        *at += 1;
        let node = if value.is_empty() || (value.starts_with('!') && !value.contains(' ')) {
            let nested = if *at < lines.len() && lines[*at].indent > map_indent {
                parse_block(lines, at, map_indent + 1)
            } else {
                Yaml::Scalar(String::new())
            };
            if value.is_empty() {
                nested
            } else {
                Yaml::Map(vec![(value.to_owned(), nested)])
            }
        } else if value.starts_with('>') || value.starts_with('|') {
            let mut folded = Vec::new();
            while *at < lines.len() && lines[*at].indent > map_indent {
                folded.push(lines[*at].text);
                *at += 1;
            }
            Yaml::Scalar(folded.join(" "))
        } else {
            Yaml::Scalar(value.trim_matches('"').to_owned())
        };
        pairs.push((key.trim().to_owned(), node));
    }
    Yaml::Map(pairs)
}

/// `key:` or `key: value` (not a scalar that merely contains a colon, like a URL or a tag's
/// argument).
fn is_key(text: &str) -> bool {
    let Some((key, rest)) = text.split_once(':') else {
        return false;
    };
    !key.is_empty()
        && !key.starts_with('!')
        && !key.contains(' ')
        && !key.starts_with('"')
        && (rest.is_empty() || rest.starts_with(' '))
}

/// One statement of the function's policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// Its `Sid`.
    pub sid: String,
    /// The template condition it is under (`!If [Cond, statement, AWS::NoValue]`), if any.
    pub condition: Option<String>,
    /// `Allow` or `Deny`.
    pub effect: String,
    /// Its actions (`dynamodb:GetItem`).
    pub actions: Vec<String>,
    /// Its resources, as written (`!GetAtt Table.Arn`).
    pub resources: Vec<String>,
}

/// Every statement of every inline policy of every `AWS::Serverless::Function` in the
/// template, and each function's environment variables (name → value as written).
pub fn policy_statements(template: &str) -> (Vec<Statement>, BTreeMap<String, String>) {
    let doc = parse_yaml(template);
    let mut statements = Vec::new();
    let mut env = BTreeMap::new();
    let Some(Yaml::Map(resources)) = doc.get("Resources") else {
        panic!("the template has no Resources");
    };
    for (_, resource) in resources {
        if resource.get("Type").and_then(Yaml::as_str) != Some("AWS::Serverless::Function") {
            continue;
        }
        let props = resource.get("Properties").expect("function properties");
        if let Some(Yaml::Map(vars)) = props.get("Environment").and_then(|e| e.get("Variables")) {
            for (k, v) in vars {
                env.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
            }
        }
        for policy in props.get("Policies").map(Yaml::items).unwrap_or_default() {
            for item in policy.get("Statement").map(Yaml::items).unwrap_or_default() {
                statements.extend(statement(item, None));
            }
        }
    }
    (statements, env)
}

fn statement(item: &Yaml, condition: Option<String>) -> Option<Statement> {
    if let Some(branches) = item.get("!If") {
        // `- !If` / `- Cond` / `- {statement}` / `- !Ref AWS::NoValue`
        let branches = branches.items();
        let cond = branches.first()?.as_str()?.to_owned();
        return statement(branches.get(1)?, Some(cond));
    }
    let strings = |key: &str| -> Vec<String> {
        item.get(key)
            .map(Yaml::items)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|y| match y {
                Yaml::Scalar(s) => Some(s.clone()),
                Yaml::Map(pairs) => pairs.first().map(|(k, v)| {
                    format!("{k} {}", v.as_str().unwrap_or_default())
                        .trim()
                        .to_owned()
                }),
                Yaml::Seq(_) => None,
            })
            .collect()
    };
    Some(Statement {
        sid: item.get("Sid")?.as_str()?.to_owned(),
        condition,
        effect: item.get("Effect")?.as_str()?.to_owned(),
        actions: strings("Action"),
        resources: strings("Resource"),
    })
}

/// Everything wrong with `template`'s policy for the Lambda code in `sources`: an action the
/// code needs and no statement allows, one allowed that no code needs, a table or parameter
/// granted on the wrong resource. Empty when the policy is exactly right.
pub fn policy_problems(
    template: &str,
    sources: &[(String, String)],
    services: &ServiceOperations,
) -> Vec<String> {
    let calls = calls_in(sources, services);
    let required = required_actions(&calls, sources);
    let (statements, env) = policy_statements(template);
    let mut problems = Vec::new();
    if statements.is_empty() {
        problems.push("no policy statement found in the template".into());
    }
    let allowed: BTreeSet<&str> = statements
        .iter()
        .filter(|s| s.effect == "Allow")
        .flat_map(|s| s.actions.iter().map(String::as_str))
        .collect();
    for r in &required {
        if !allowed.contains(r.action.as_str()) {
            problems.push(format!("{} is not allowed ({})", r.action, r.because));
        }
    }
    let needed: BTreeSet<&str> = required.iter().map(|r| r.action.as_str()).collect();
    for action in &allowed {
        if !needed.contains(action) {
            problems.push(format!("{action} is allowed but no code calls it"));
        }
    }
    // DynamoDB actions on the table the function is told to use.
    let table = env
        .get("RUNWAY_DYNAMODB_TABLE")
        .and_then(|v| v.strip_prefix("!Ref "))
        .map(|t| format!("!GetAtt {t}.Arn"));
    for s in &statements {
        if s.actions.iter().any(|a| a.starts_with("dynamodb:"))
            && table.as_ref().is_none_or(|t| s.resources != [t.clone()])
        {
            problems.push(format!(
                "statement {}: DynamoDB actions on {:?}, not on the table in RUNWAY_DYNAMODB_TABLE ({table:?})",
                s.sid, s.resources
            ));
        }
    }
    // Each parameter the code reads by a setting the template sets: GetParameter on it. The
    // code reads every `NAME_SSM_PARAMETER` it is given (a workers file's `${NAME}`), so each
    // such setting of the template counts, not only the ones the code names.
    let given = env
        .keys()
        .filter(|k| k.ends_with("_SSM_PARAMETER"))
        .cloned();
    let settings: BTreeSet<String> = ssm_parameter_settings(sources)
        .into_iter()
        .chain(given)
        .collect();
    for setting in settings {
        let Some(parameter) = env.get(&setting).and_then(|v| v.strip_prefix("!Ref ")) else {
            continue;
        };
        let arn_tail = format!(":parameter${{{parameter}}}");
        let granted = statements.iter().any(|s| {
            s.actions.iter().any(|a| a == "ssm:GetParameter")
                && s.resources.iter().any(|r| r.ends_with(&arn_tail))
        });
        if !granted {
            problems.push(format!(
                "{setting} names the parameter {parameter}, but no statement allows ssm:GetParameter on it"
            ));
        }
    }
    problems
}

/// The Rust sources under `dir` (recursively): `(path relative to dir, text)`.
pub fn rust_sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("source dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("source");
                let name = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                out.push((name, text));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> ServiceOperations {
        let mut s = ServiceOperations::new();
        s.insert(
            "dynamodb".into(),
            [
                "get_item",
                "put_item",
                "query",
                "batch_get_item",
                "transact_write_items",
            ]
            .map(String::from)
            .into(),
        );
        s.insert("ssm".into(), ["get_parameter"].map(String::from).into());
        s
    }

    #[test]
    fn calls_outside_comments_and_strings_become_actions() {
        let src = r##"
            // self.client.query() in a comment
            let s = "x.put_item()";
            let r = r#"y.batch_get_item()"#;
            let out = self
                .client
                .get_item ( )
                .send();
            let t = TransactWriteItem::builder().put(Put::builder().build());
            let u = PutRequest::builder();
            let c = '"'; let l: &'static str = "";
            self.client.transact_write_items().send();
            client.get_parameter().with_decryption(true).send();
            url.query_pairs();
        "##;
        let sources = vec![("a.rs".to_owned(), src.to_owned())];
        let calls = calls_in(&sources, &ops());
        let names: Vec<&str> = calls.iter().map(|c| c.operation.as_str()).collect();
        assert_eq!(names, ["get_item", "transact_write_items", "get_parameter"]);
        let actions: Vec<String> = required_actions(&calls, &sources)
            .into_iter()
            .map(|r| r.action)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(
            actions,
            [
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "kms:Decrypt",
                "ssm:GetParameter"
            ]
        );
    }

    /// A request the code signs and sends itself counts as its operation's call, with the
    /// decryption its JSON body asks for.
    #[test]
    fn json_protocol_targets_in_the_code_become_actions() {
        let src = r##"
            // "AmazonSSM.DeleteParameter" in a comment
            const TARGET: &str = "AmazonSSM.GetParameter";
            let other = "AmazonSSM.GetParameterX2";
            let prefix_only = "AmazonSSM.";
            let body = serde_json::json!({"Name": name, "WithDecryption": true});
        "##;
        let sources = vec![("a.rs".to_owned(), src.to_owned())];
        let calls = calls_in(&sources, &ServiceOperations::new());
        let found: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|c| (c.service.as_str(), c.operation.as_str(), c.at.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("ssm", "get_parameter", "a.rs:3"),
                ("ssm", "get_parameter_x2", "a.rs:4")
            ]
        );
        let actions: BTreeSet<String> = required_actions(&calls[..1], &sources)
            .into_iter()
            .map(|r| r.action)
            .collect();
        assert_eq!(
            actions.into_iter().collect::<Vec<_>>(),
            ["kms:Decrypt", "ssm:GetParameter"]
        );
    }

    #[test]
    fn reads_statements_under_conditions() {
        let t = "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      Environment:\n        Variables:\n          RUNWAY_DYNAMODB_TABLE: !Ref Table\n      Policies:\n        - Version: \"2012-10-17\"\n          Statement:\n            - Sid: A\n              Effect: Allow\n              Action:\n                - dynamodb:GetItem\n              Resource: !GetAtt Table.Arn\n            - !If\n              - HasKey\n              - Sid: K\n                Effect: Allow\n                Action:\n                  - kms:Decrypt\n                Resource: !Ref KeyArn\n              - !Ref AWS::NoValue\n";
        let (statements, env) = policy_statements(t);
        assert_eq!(env["RUNWAY_DYNAMODB_TABLE"], "!Ref Table");
        assert_eq!(statements.len(), 2, "{statements:?}");
        assert_eq!(statements[0].actions, ["dynamodb:GetItem"]);
        assert_eq!(statements[0].resources, ["!GetAtt Table.Arn"]);
        assert_eq!(statements[1].condition.as_deref(), Some("HasKey"));
        assert_eq!(statements[1].actions, ["kms:Decrypt"]);
    }

    /// The Lambda code reads every `NAME_SSM_PARAMETER` setting it is given (a workers file's
    /// `${NAME}`), not only the ones it names: each the template sets needs its grant.
    #[test]
    fn every_parameter_setting_of_the_template_needs_its_grant() {
        let template = |grant: &str| {
            format!(
                "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      Environment:\n        Variables:\n          OPENAI_KEY_SSM_PARAMETER: !Ref OpenAiKey\n      Policies:\n        - Version: \"2012-10-17\"\n          Statement:\n            - Sid: Key\n              Effect: Allow\n              Action:\n                - ssm:GetParameter\n              Resource: !Sub arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter${{{grant}}}\n"
            )
        };
        let sources = vec![(
            "a.rs".to_owned(),
            "client.get_parameter().send();".to_owned(),
        )];
        let about_key = |t: &str| -> Vec<String> {
            policy_problems(t, &sources, &ops())
                .into_iter()
                .filter(|p| p.contains("OPENAI_KEY_SSM_PARAMETER"))
                .collect()
        };
        assert_eq!(about_key(&template("OtherParameter")).len(), 1);
        assert!(about_key(&template("OpenAiKey")).is_empty());
    }
}
