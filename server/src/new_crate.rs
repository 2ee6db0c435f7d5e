//! `runway new DIR`: writes a starter crate for the user's own agent (templates embedded in the
//! binary, under `server/templates/new/`), with path dependencies to this checkout.

use std::path::{Path, PathBuf};

/// The checkout this binary was built from: the generated crate's path dependencies.
const CHECKOUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
/// Exact `worker` pin of runway-cloudflare, which the generated Worker must share.
const CLOUDFLARE_MANIFEST: &str = include_str!("../../cloudflare/Cargo.toml");
/// The repo's Worker config: its `compatibility_date` fits the pinned wrangler.
const WRANGLER_CONFIG: &str = include_str!("../../cloudflare/wrangler.toml");
const TOOLCHAIN: &str = include_str!("../../rust-toolchain.toml");
/// runway's own SAM template: the new crate's is derived from it (see [`sam_template`]), so the
/// two never drift apart (IAM actions, limits, alarms).
const SAM_TEMPLATE: &str = include_str!("../../infra/aws/template.yaml");

/// (path in the new crate, template).
const FILES: [(&str, &str); 11] = [
    ("Cargo.toml", include_str!("../templates/new/Cargo.toml")),
    ("README.md", include_str!("../templates/new/README.md")),
    ("src/lib.rs", include_str!("../templates/new/src/lib.rs")),
    ("src/main.rs", include_str!("../templates/new/src/main.rs")),
    (
        "src/bin/bootstrap.rs",
        include_str!("../templates/new/src/bin/bootstrap.rs"),
    ),
    (
        "src/cloudflare.rs",
        include_str!("../templates/new/src/cloudflare.rs"),
    ),
    (
        "samconfig.toml",
        include_str!("../templates/new/samconfig.toml"),
    ),
    (
        "wrangler.toml",
        include_str!("../templates/new/wrangler.toml"),
    ),
    (".gitignore", include_str!("../templates/new/gitignore")),
    (
        "workers.toml",
        include_str!("../templates/new/workers.toml"),
    ),
    ("rust-toolchain.toml", TOOLCHAIN),
];

/// The new crate's SAM template: runway's own, serving the crate's agent instead of a built-in
/// one (no `AgentName` parameter, no `RUNWAY_AGENT`, and none of the built-in model agent's
/// parameters, environment lines, condition and key-reading permission), built from the
/// crate's directory. `None` if runway's template no longer has what this edits.
fn sam_template(repo: &str) -> Option<String> {
    let mut out = String::with_capacity(repo.len());
    let mut lines = repo.lines().peekable();
    let (mut dropped_parameter, mut dropped_env, mut code_uri) = (false, false, false);
    let mut dropped_model = 0;
    while let Some(line) = lines.next() {
        let parameter = line
            .strip_prefix("  ")
            .and_then(|l| l.strip_suffix(':'))
            .filter(|name| *name == "AgentName" || BUILTIN_MODEL_PARAMETERS.contains(name));
        if let Some(name) = parameter {
            // The parameter's block: its more-indented lines.
            while lines.peek().is_some_and(|l| l.starts_with("    ")) {
                lines.next();
            }
            if name == "AgentName" {
                dropped_parameter = true;
            } else {
                dropped_model += 1;
            }
            continue;
        }
        if line.trim() == "RUNWAY_AGENT: !Ref AgentName" {
            dropped_env = true;
            continue;
        }
        let names_model_parameter = BUILTIN_MODEL_PARAMETERS
            .iter()
            .any(|p| line.trim_end().ends_with(&format!("!Ref {p}")));
        if names_model_parameter || line.trim().starts_with("HasModelKey:") {
            continue;
        }
        if line.trim() == "- !If" && lines.peek().is_some_and(|l| l.trim() == "- HasModelKey") {
            // The key-reading statement: up to its `!Ref AWS::NoValue` branch.
            for l in lines.by_ref() {
                if l.trim() == "- !Ref AWS::NoValue" {
                    break;
                }
            }
            continue;
        }
        if line.trim() == "CodeUri: ../.." {
            out.push_str(&line.replace("../..", "."));
            out.push('\n');
            code_uri = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    (dropped_parameter
        && dropped_env
        && code_uri
        && dropped_model == BUILTIN_MODEL_PARAMETERS.len())
    .then_some(out)
}

/// Parameters of runway's template that only the built-in model agent reads.
const BUILTIN_MODEL_PARAMETERS: [&str; 5] = [
    "ModelBaseUrl",
    "ModelName",
    "ModelApiKeyParameterName",
    "SystemPrompt",
    "Tools",
];

/// Why `runway new` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The directory exists and has something in it.
    #[error("{0} exists and is not empty: choose a new directory")]
    NotEmpty(PathBuf),
    /// The crate name is not usable.
    #[error("{0:?} is not a usable crate name: {1} (pass --name NAME)")]
    BadName(String, &'static str),
    /// No name could be derived from the directory.
    #[error("cannot derive a crate name from {0}: pass --name NAME")]
    NoName(PathBuf),
    /// Writing failed.
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, std::io::Error),
    /// This binary's own embedded files are inconsistent (a build defect).
    #[error("{0}")]
    Embedded(&'static str),
}

/// Names a new crate may not take: Rust keywords and names cargo reserves, and the crates the
/// generated one depends on (a package cannot share its name with a dependency's library).
const RESERVED: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "gen",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "test",
    "core",
    "std",
    "alloc",
    "proc_macro",
    "proc-macro",
    "build",
    "deps",
    "examples",
    "incremental",
    "runway",
    "runway-core",
    "runway_core",
    "runway-lambda",
    "runway_lambda",
    "runway-cloudflare",
    "runway_cloudflare",
    "worker",
    "tokio",
    "serde_json",
    "serde-json",
    "bootstrap",
];

/// Checks `name` as a cargo package name whose library the templates refer to.
pub fn validate_name(name: &str) -> Result<(), NewError> {
    let bad = |why| Err(NewError::BadName(name.to_owned(), why));
    let Some(first) = name.chars().next() else {
        return bad("it is empty");
    };
    if name.len() > 64 {
        return bad("it is longer than 64 characters");
    }
    if !first.is_ascii_alphabetic() {
        return bad("it must start with an ASCII letter");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return bad("only ASCII letters, digits, '-' and '_' are allowed");
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED.contains(&lower.as_str()) || RESERVED.contains(&lower.replace('-', "_").as_str()) {
        return bad(
            "it is a Rust keyword, a name cargo reserves, or one of the crate's dependencies",
        );
    }
    // Windows device names, which cargo refuses too.
    if ["con", "prn", "aux", "nul"].contains(&lower.as_str())
        || (lower.len() == 4
            && (lower.starts_with("com") || lower.starts_with("lpt"))
            && lower.as_bytes()[3].is_ascii_digit())
    {
        return bad("it is a reserved device name on Windows");
    }
    Ok(())
}

/// The crate name derived from `dir` (its last component).
pub fn name_from_dir(dir: &Path) -> Result<String, NewError> {
    let absolute = std::path::absolute(dir).map_err(|e| NewError::Write(dir.to_owned(), e))?;
    absolute
        .components()
        .next_back()
        .and_then(|c| match c {
            std::path::Component::Normal(s) => s.to_str().map(str::to_owned),
            _ => None,
        })
        .ok_or_else(|| NewError::NoName(dir.to_owned()))
}

/// A TOML basic string's content (without the quotes) for `s`.
fn toml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The value of the first `KEY = "=VERSION"` / `KEY = "VALUE"` line in a TOML file.
fn quoted_value<'a>(toml: &'a str, key: &str) -> Option<&'a str> {
    toml.lines().find_map(|line| {
        let rest = line
            .strip_prefix(key)?
            .trim_start()
            .strip_prefix('=')?
            .trim();
        let value = rest.strip_prefix('"')?;
        Some(&value[..value.find('"')?])
    })
}

/// What was written.
#[derive(Debug)]
pub struct Created {
    /// The crate's directory.
    pub dir: PathBuf,
    /// The package name.
    pub name: String,
}

/// Writes the starter crate into `dir` (created if missing; refused unless empty), named
/// `name` or after `dir`.
pub fn create(dir: &Path, name: Option<&str>) -> Result<Created, NewError> {
    let name = match name {
        Some(n) => n.to_owned(),
        None => name_from_dir(dir)?,
    };
    validate_name(&name)?;
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(NewError::NotEmpty(dir.to_owned()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(NewError::Write(dir.to_owned(), e)),
    }
    let worker_version = quoted_value(CLOUDFLARE_MANIFEST, "worker")
        .and_then(|v| v.strip_prefix('='))
        .ok_or(NewError::Embedded(
            "no exact worker pin in cloudflare/Cargo.toml",
        ))?;
    let compatibility_date = quoted_value(WRANGLER_CONFIG, "compatibility_date").ok_or(
        NewError::Embedded("no compatibility_date in cloudflare/wrangler.toml"),
    )?;
    let checkout = std::path::absolute(CHECKOUT)
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .unwrap_or_else(|| PathBuf::from(CHECKOUT));
    let runway_dir = toml_escape(&checkout.to_string_lossy());
    let crate_ident = name.replace('-', "_");

    let mut written = Vec::new();
    for (path, template) in FILES {
        let text = template
            .replace("{{name}}", &name)
            .replace("{{crate}}", &crate_ident)
            .replace("{{runway_dir}}", &runway_dir)
            .replace("{{worker_version}}", worker_version)
            .replace("{{compatibility_date}}", compatibility_date);
        written.push((dir.join(path), text));
    }
    written.push((
        dir.join("template.yaml"),
        sam_template(SAM_TEMPLATE).ok_or(NewError::Embedded(
            "infra/aws/template.yaml no longer has the AgentName parameter or CodeUri ../..",
        ))?,
    ));
    // Start from the lockfile runway is tested with (the generated crate resolves the same
    // versions, and a shared target directory reuses what the checkout already built).
    if let Ok(lock) = std::fs::read_to_string(checkout.join("Cargo.lock")) {
        written.push((dir.join("Cargo.lock"), lock));
    }
    for (path, text) in written {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| NewError::Write(parent.to_owned(), e))?;
        }
        std::fs::write(&path, text).map_err(|e| NewError::Write(path.clone(), e))?;
    }
    Ok(Created {
        dir: dir.to_owned(),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_workers_file_serves_its_two_workers() {
        let text = FILES.iter().find(|(p, _)| *p == "workers.toml").unwrap().1;
        let own = runway_core::Workers::any(runway_agents::EchoAgent);
        let workers = runway_agents::load_workers(
            text,
            "workers.toml",
            &own,
            &runway_core::adapter::TokioRuntime,
            &|_| None,
            &|_| Err("no files".into()),
            &|m| m,
        )
        .unwrap();
        let p = workers.policy();
        assert!(p.serves("918273688800000200") && p.serves("918273688800000300"));
        assert!(!p.serves("918273688800000400"));
        assert_eq!(p.name("918273688800000200"), Some("Order desk"));
    }

    #[test]
    fn names() {
        for ok in ["my-agent", "flight_desk", "A1", "x"] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1agent",
            "-x",
            "my agent",
            "agent!",
            "é",
            "fn",
            "test",
            "runway",
            "runway_core",
            "worker",
            "bootstrap",
            "con",
            "COM1",
            &"a".repeat(65),
        ] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn name_from_a_directory() {
        assert_eq!(
            name_from_dir(Path::new("/tmp/x/flight-desk")).unwrap(),
            "flight-desk"
        );
        assert_eq!(
            name_from_dir(Path::new("/tmp/x/flight-desk/")).unwrap(),
            "flight-desk"
        );
        assert!(name_from_dir(Path::new("/")).is_err());
    }

    #[test]
    fn embedded_pins_are_found() {
        assert!(
            quoted_value(CLOUDFLARE_MANIFEST, "worker").is_some_and(|v| v.starts_with('=')),
            "cloudflare/Cargo.toml pins worker exactly"
        );
        assert!(quoted_value(WRANGLER_CONFIG, "compatibility_date").is_some());
        assert_eq!(toml_escape(r#"a\b"c"#), r#"a\\b\"c"#);
    }

    #[test]
    fn refuses_a_non_empty_directory_and_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("runway-new-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("keep.txt"), "mine").unwrap();
        assert!(matches!(
            create(&dir, Some("agent-x")),
            Err(NewError::NotEmpty(_))
        ));
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["keep.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_every_file_with_no_placeholder_left() {
        let dir = std::env::temp_dir().join(format!(
            "runway-new-test-{}/flight-desk",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        let created = create(&dir, None).unwrap();
        assert_eq!(created.name, "flight-desk");
        for (path, _) in FILES {
            let text = std::fs::read_to_string(dir.join(path)).unwrap();
            assert!(!text.contains("{{"), "{path} keeps a placeholder");
        }
        let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
        assert!(main.contains("runway::serve(flight_desk::MyAgent)"));
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn the_sam_template_is_runways_own_serving_the_crates_agent() {
        let t = sam_template(SAM_TEMPLATE).expect("runway's template has what is edited");
        assert!(!t.contains("AgentName"), "{t}");
        for p in BUILTIN_MODEL_PARAMETERS {
            assert!(!t.contains(p), "{p} is the built-in model agent's: {t}");
        }
        assert!(
            !t.contains("RUNWAY_MODEL") && !t.contains("HasModelKey"),
            "{t}"
        );
        assert!(t.contains("      CodeUri: .\n"), "{t}");
        // Everything else is runway's, in order: what was dropped is only the parameter's
        // block and the environment line naming it.
        let mut generated = t.lines().peekable();
        let mut dropped = Vec::new();
        for line in SAM_TEMPLATE.lines() {
            let expected = line.replace("CodeUri: ../..", "CodeUri: .");
            if generated.peek() == Some(&expected.as_str()) {
                generated.next();
            } else {
                dropped.push(line);
            }
        }
        assert_eq!(generated.next(), None);
        assert!(dropped[0] == "  AgentName:", "{dropped:?}");
        assert!(
            dropped.iter().any(|l| l.contains("RUNWAY_AGENT")),
            "{dropped:?}"
        );
        // Only the built-in agents' lines went: each names AgentName, a model parameter or
        // the model key, or is inside one of their blocks.
        assert!(dropped.len() <= 60, "{dropped:?}");
        assert!(
            t.contains("Sid: AuthHeaders") && t.contains("Sid: RunwayTable"),
            "{t}"
        );
    }
}
