//! `runway new DIR`: writes a starter crate for the user's own agent (templates embedded in the
//! binary, under `server/templates/new/`), depending on runway by the source the user picks
//! ([`RunwaySource`]): this checkout by path (relative when the crate sits beside or inside it),
//! a git repository (a fork), or a published version.

use std::path::{Component, Path, PathBuf};

/// The checkout this binary was built from: the generated crate's path dependencies. A binary
/// installed from the registry has no checkout there (see [`RunwaySource::default_for_build`]).
const CHECKOUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
/// The runway crates a generated crate depends on, by their directory in the checkout.
const RUNWAY_CRATES: [(&str, &str); 4] = [
    ("core", "runway-core"),
    ("server", "runway"),
    ("lambda", "runway-lambda"),
    ("cloudflare", "runway-cloudflare"),
];
/// Exact `worker` pin of runway-cloudflare, which the generated Worker must share.
const CLOUDFLARE_MANIFEST: &str = include_str!("../templates/upstream/cloudflare-Cargo.toml");
/// The repo's Worker config: its `compatibility_date` fits the pinned wrangler, and its
/// `compatibility_flags` are what runway's Worker needs (`enable_request_signal`).
const WRANGLER_CONFIG: &str = include_str!("../templates/upstream/wrangler.toml");
/// The repo's toolchain; the new crate's adds the Lambda's arm64 target (see [`toolchain`]).
const TOOLCHAIN: &str = include_str!("../templates/upstream/rust-toolchain.toml");
/// runway's own SAM template: the new crate's is derived from it (see [`sam_template`]), so the
/// two never drift apart (IAM actions, limits, alarms).
const SAM_TEMPLATE: &str = include_str!("../templates/upstream/template.yaml");
/// The auth header set's parameter name in runway's template; a new crate uses its own.
const RUNWAY_AUTH_PARAMETER: &str = "/runway/auth-headers";
/// The target `cargo lambda build --arm64` (and so `sam build`) compiles for.
const LAMBDA_TARGET: &str = "aarch64-unknown-linux-gnu";

/// (path in the new crate, template). A template whose own name would mean something in this
/// repository is named otherwise: `Cargo.toml.template` (a `Cargo.toml` would make cargo
/// leave the directory out of the packaged `runway` crate), `gitignore`.
const FILES: [(&str, &str); 10] = [
    (
        "Cargo.toml",
        include_str!("../templates/new/Cargo.toml.template"),
    ),
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
];

/// The new crate's SAM template: runway's own, serving the crate's agent instead of a built-in
/// one (no `AgentName` parameter, no `RUNWAY_AGENT`, and none of the parameters and
/// environment lines only the built-in model agent reads; the model key's parameter, its
/// condition and its permission stay, for the model workers of a workers file), built from
/// the crate's directory, reading its auth header set from its own SSM parameter
/// (`/<name>/auth-headers`, what its README creates). `None` if runway's template no longer
/// has what this edits.
fn sam_template(repo: &str, name: &str) -> Option<String> {
    let own_parameter = format!("/{name}/auth-headers");
    if !repo.contains(RUNWAY_AUTH_PARAMETER) {
        return None;
    }
    // The Workers parameter's description names the built-in agent's parameter, dropped below.
    let repo = repo
        .replace(RUNWAY_AUTH_PARAMETER, &own_parameter)
        .replace("the one agent of AgentName", "the crate's agent");
    let repo = repo.as_str();
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
        // A description's line about the built-in model agent (the model key's parameter).
        if names_model_parameter || line.contains("(AgentName model)") {
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
/// (`ModelApiKeyParameterName` is a workers file's `${RUNWAY_MODEL_API_KEY}` too.)
const BUILTIN_MODEL_PARAMETERS: [&str; 4] = ["ModelBaseUrl", "ModelName", "SystemPrompt", "Tools"];

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
    /// The flags naming runway's source contradict each other or are malformed.
    #[error("{0}")]
    Source(String),
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

/// What follows `KEY =` on the first line of a TOML file that sets `key`, trimmed.
fn toml_value<'a>(toml: &'a str, key: &str) -> Option<&'a str> {
    toml.lines().find_map(|line| {
        Some(
            line.strip_prefix(key)?
                .trim_start()
                .strip_prefix('=')?
                .trim(),
        )
    })
}

/// The value of the first `KEY = "=VERSION"` / `KEY = "VALUE"` line in a TOML file.
fn quoted_value<'a>(toml: &'a str, key: &str) -> Option<&'a str> {
    let value = toml_value(toml, key)?.strip_prefix('"')?;
    Some(&value[..value.find('"')?])
}

/// Where a generated crate gets runway from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunwaySource {
    /// A runway checkout on this machine, by path: relative to the crate when both sit under a
    /// common directory below the filesystem root (a team keeps them side by side, or the crate
    /// inside the checkout, and the path holds on any machine laid out the same), absolute
    /// otherwise.
    Checkout(PathBuf),
    /// A git repository (`--runway-git URL`, a fork), at `rev` (`--runway-rev`: a tag, branch
    /// or commit) or its default branch.
    Git {
        /// The repository URL.
        url: String,
        /// A tag, branch or commit.
        rev: Option<String>,
    },
    /// Published runway crates (`--runway-version V`), pinned exactly: runway-cloudflare pins
    /// `worker` exactly, and the crate's own `worker` pin must be the same.
    Version(String),
}

impl RunwaySource {
    /// The checkout this binary was built from, or (a binary installed from the registry, with
    /// no checkout beside its sources) the published version of this binary.
    pub fn default_for_build() -> Self {
        let checkout = std::path::absolute(CHECKOUT)
            .ok()
            .and_then(|p| p.canonicalize().ok())
            .filter(|p| p.join("core/Cargo.toml").is_file());
        match checkout {
            Some(dir) => Self::Checkout(dir),
            None => Self::Version(env!("CARGO_PKG_VERSION").to_owned()),
        }
    }

    /// The source `--runway-git` / `--runway-rev` / `--runway-version` name, else
    /// [`RunwaySource::default_for_build`].
    ///
    /// # Errors
    /// Both a git URL and a version, a revision without a git URL, or a version that is not
    /// `MAJOR.MINOR.PATCH`.
    pub fn from_flags(
        git: Option<String>,
        rev: Option<String>,
        version: Option<String>,
    ) -> Result<Self, NewError> {
        match (git, rev, version) {
            (Some(_), _, Some(_)) => Err(NewError::Source(
                "--runway-git and --runway-version exclude each other".into(),
            )),
            (None, Some(_), _) => Err(NewError::Source("--runway-rev needs --runway-git".into())),
            (Some(url), rev, None) if !url.trim().is_empty() => Ok(Self::Git {
                url: url.trim().to_owned(),
                rev: rev.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()),
            }),
            (Some(_), _, None) => Err(NewError::Source("--runway-git needs a URL".into())),
            (None, None, Some(v)) => {
                let v = v.trim().trim_start_matches('=');
                let semver = v.split('.').count() == 3
                    && v.split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
                if semver {
                    Ok(Self::Version(v.to_owned()))
                } else {
                    Err(NewError::Source(format!(
                        "--runway-version {v:?} is not a version like 0.1.0"
                    )))
                }
            }
            (None, None, None) => Ok(Self::default_for_build()),
        }
    }
}

/// How a crate at `crate_dir` (absolute) names runway's crate in the checkout's directory
/// `sub`: the inside of a TOML inline table (`path = "…"`, `git = "…"`, `version = "…"`), so a
/// template can add keys (`runway-core = { {{source:core}}, features = ["testing"] }`).
fn dependency(source: &RunwaySource, crate_dir: &Path, sub: &str) -> String {
    match source {
        RunwaySource::Checkout(checkout) => {
            let path = checkout_path(checkout, crate_dir).join(sub);
            // Forward slashes: the manifest then reads the same on every platform.
            let path = path.to_string_lossy().replace('\\', "/");
            format!("path = \"{}\"", toml_escape(&path))
        }
        RunwaySource::Git { url, rev } => {
            let rev = rev
                .as_ref()
                .map(|r| format!(", rev = \"{}\"", toml_escape(r)))
                .unwrap_or_default();
            format!("git = \"{}\"{rev}", toml_escape(url))
        }
        RunwaySource::Version(v) => format!("version = \"={}\"", toml_escape(v)),
    }
}

/// The checkout as the crate's manifest names it: relative to `crate_dir` when the two share a
/// directory below the root, else absolute.
fn checkout_path(checkout: &Path, crate_dir: &Path) -> PathBuf {
    let from: Vec<Component> = crate_dir.components().collect();
    let to: Vec<Component> = checkout.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let below_root = to[..common]
        .iter()
        .any(|c| matches!(c, Component::Normal(_)));
    if !below_root {
        return checkout.to_owned();
    }
    let mut rel = PathBuf::new();
    for _ in common..from.len() {
        rel.push("..");
    }
    for c in &to[common..] {
        rel.push(c);
    }
    if rel.as_os_str().is_empty() {
        rel.push(".");
    }
    rel
}

/// The command that installs the `runway` CLI from `source`.
fn install_command(source: &RunwaySource, crate_dir: &Path) -> String {
    match source {
        RunwaySource::Checkout(checkout) => format!(
            "cargo install --profile fast --path {}",
            checkout_path(checkout, crate_dir).join("server").display()
        ),
        RunwaySource::Git { url, rev } => format!(
            "cargo install --profile fast --git {url}{} runway",
            rev.as_ref()
                .map(|r| format!(" --rev {r}"))
                .unwrap_or_default()
        ),
        RunwaySource::Version(v) => format!("cargo install --profile fast runway --version {v}"),
    }
}

/// The new crate's `rust-toolchain.toml`: runway's toolchain, with the Lambda's arm64 target
/// beside the Workers' wasm32 one (`sam build` runs `cargo lambda build --arm64`). `None` if
/// runway's file has no `targets` line.
fn toolchain(repo: &str) -> Option<String> {
    let mut found = false;
    let text: Vec<String> = repo
        .lines()
        .map(|line| match line.trim().strip_prefix("targets") {
            Some(rest) if rest.trim_start().starts_with('=') && !line.contains(LAMBDA_TARGET) => {
                found = true;
                let list = line.trim_end().trim_end_matches(']').trim_end();
                format!("{list}, \"{LAMBDA_TARGET}\"]")
            }
            Some(_) if line.contains(LAMBDA_TARGET) => {
                found = true;
                line.to_owned()
            }
            _ => line.to_owned(),
        })
        .collect();
    found.then(|| text.join("\n") + "\n")
}

/// The first `KEY = [...]` line's value in a TOML file, brackets included.
fn array_value<'a>(toml: &'a str, key: &str) -> Option<&'a str> {
    let value = toml_value(toml, key)?;
    let end = value.find(']')?;
    value.starts_with('[').then(|| &value[..=end])
}

/// What was written.
#[derive(Debug)]
pub struct Created {
    /// The crate's directory.
    pub dir: PathBuf,
    /// The package name.
    pub name: String,
    /// A note about where runway comes from, when the crate will not build elsewhere as is.
    pub note: Option<String>,
}

/// Writes the starter crate into `dir` (created if missing; refused unless empty), named
/// `name` or after `dir`, depending on runway from `source`.
pub fn create(dir: &Path, name: Option<&str>, source: &RunwaySource) -> Result<Created, NewError> {
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
    let compatibility_flags = array_value(WRANGLER_CONFIG, "compatibility_flags").ok_or(
        NewError::Embedded("no compatibility_flags in cloudflare/wrangler.toml"),
    )?;
    let crate_dir = absolute_clean(dir)?;
    let crate_ident = name.replace('-', "_");
    let mut note = None;
    let mut own_workspace = "";
    if let RunwaySource::Checkout(checkout) = source {
        if checkout_path(checkout, &crate_dir).is_absolute() {
            note = Some(format!(
                "{name} depends on runway at the absolute path {}: it builds only where runway \
                 sits at that same path. For a crate your team and CI can build, create it \
                 beside the runway checkout (a relative path), or pass --runway-git URL or \
                 --runway-version V.",
                checkout.display()
            ));
        }
        if crate_dir.starts_with(checkout) {
            // Not a member of runway's workspace: a workspace of its own.
            own_workspace = "\n# A workspace of its own: it sits inside the runway checkout without being one of\n# runway's workspace members.\n[workspace]\n";
        }
    }

    let mut written = Vec::new();
    for (path, template) in FILES {
        let mut text = template
            .replace("{{name}}", &name)
            .replace("{{crate}}", &crate_ident)
            .replace("{{install_runway}}", &install_command(source, &crate_dir))
            .replace("{{worker_version}}", worker_version)
            .replace("{{compatibility_date}}", compatibility_date)
            .replace("{{compatibility_flags}}", compatibility_flags);
        for (sub, _) in RUNWAY_CRATES {
            text = text.replace(
                &format!("{{{{source:{sub}}}}}"),
                &dependency(source, &crate_dir, sub),
            );
        }
        if path == "Cargo.toml" {
            text.push_str(own_workspace);
        }
        written.push((dir.join(path), text));
    }
    written.push((
        dir.join("rust-toolchain.toml"),
        toolchain(TOOLCHAIN).ok_or(NewError::Embedded(
            "rust-toolchain.toml has no targets line",
        ))?,
    ));
    written.push((
        dir.join("template.yaml"),
        sam_template(SAM_TEMPLATE, &name).ok_or(NewError::Embedded(
            "infra/aws/template.yaml no longer has the AgentName parameter, CodeUri ../.. or \
             /runway/auth-headers",
        ))?,
    ));
    // Start from the lockfile runway is tested with, whatever the source (the generated crate
    // resolves the same versions of everything else, and a shared target directory reuses what
    // the checkout already built); cargo re-resolves only the runway crates' own entries.
    let checkout = match source {
        RunwaySource::Checkout(checkout) => Some(checkout.clone()),
        _ => match RunwaySource::default_for_build() {
            RunwaySource::Checkout(checkout) => Some(checkout),
            _ => None,
        },
    };
    if let Some(lock) = checkout.and_then(|c| std::fs::read_to_string(c.join("Cargo.lock")).ok()) {
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
        note,
    })
}

/// `dir` made absolute, `.` and `..` resolved lexically, and its deepest existing ancestor
/// canonicalised (the directory itself may not exist yet), so it compares with the canonical
/// checkout path.
fn absolute_clean(dir: &Path) -> Result<PathBuf, NewError> {
    let absolute = std::path::absolute(dir).map_err(|e| NewError::Write(dir.to_owned(), e))?;
    let mut lexical = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(last), Some(parent)) => {
                rest.push(last);
                existing = parent.to_owned();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    out.extend(rest.iter().rev());
    Ok(out)
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
            create(&dir, Some("agent-x"), &RunwaySource::default_for_build()),
            Err(NewError::NotEmpty(_))
        ));
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["keep.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A temporary parent directory, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(label: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("runway-new-test-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir.canonicalize().unwrap())
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn read(dir: &Path, path: &str) -> String {
        std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn writes_every_file_with_no_placeholder_left() {
        let scratch = Scratch::new("files");
        let dir = scratch.0.join("flight-desk");
        let created = create(&dir, None, &RunwaySource::default_for_build()).unwrap();
        assert_eq!(created.name, "flight-desk");
        for path in FILES
            .iter()
            .map(|(p, _)| *p)
            .chain(["rust-toolchain.toml", "template.yaml"])
        {
            assert!(
                !read(&dir, path).contains("{{"),
                "{path} keeps a placeholder"
            );
        }
        assert!(read(&dir, "src/main.rs").contains("runway::serve(flight_desk::MyAgent)"));
        // The agent ships with its tests on the testing kit (run by `cargo test`, and in CI by
        // tests/tests/new_crate_local.rs).
        let lib = read(&dir, "src/lib.rs");
        assert!(lib.contains("#[cfg(test)]\nmod tests {"), "{lib}");
        assert!(lib.contains("TestRunway::new(MyAgent)"), "{lib}");
        let manifest = read(&dir, "Cargo.toml");
        let dev = manifest
            .split("\n[dev-dependencies]\n")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap_or_default();
        assert!(
            dev.starts_with("runway-core = { path = ")
                && dev.ends_with(r#"features = ["testing"] }"#),
            "{manifest}"
        );
    }

    /// What issue 19 found in a generated crate, each fixed: its own SSM parameter, the
    /// request-signal flag and worker-build's entry module, a `.gitignore` for everything the
    /// tools write, and the arm64 target `sam build` compiles for.
    #[test]
    fn the_deploy_files_deploy_as_written() {
        let scratch = Scratch::new("deploy");
        let dir = scratch.0.join("flight-desk");
        create(&dir, None, &RunwaySource::default_for_build()).unwrap();

        let template = read(&dir, "template.yaml");
        assert!(
            !template.contains(RUNWAY_AUTH_PARAMETER),
            "runway's parameter name left in template.yaml"
        );
        assert!(
            template.contains("    Default: /flight-desk/auth-headers\n"),
            "AuthHeadersParameterName's default is not the crate's own parameter"
        );
        let readme = read(&dir, "README.md");
        assert!(
            readme.contains("--name /flight-desk/auth-headers"),
            "{readme}"
        );
        assert!(!readme.contains(RUNWAY_AUTH_PARAMETER), "{readme}");
        assert!(
            readme.contains("Function Function Url has no authentication. Is this okay? [y/N]"),
            "the README does not answer SAM's guided question"
        );
        assert!(
            readme.contains("npx wrangler login")
                && readme.find("wrangler secret put") < readme.find("npx wrangler deploy "),
            "the README does not log in and put the secret before the first deploy"
        );

        let wrangler = read(&dir, "wrangler.toml");
        assert!(
            wrangler.contains("\nmain = \"build/index.js\"\n"),
            "{wrangler}"
        );
        assert_eq!(
            array_value(&wrangler, "compatibility_flags"),
            array_value(WRANGLER_CONFIG, "compatibility_flags"),
        );
        assert!(
            array_value(&wrangler, "compatibility_flags")
                .is_some_and(|f| f.contains("\"enable_request_signal\"")),
            "{wrangler}"
        );

        let ignored: Vec<String> = read(&dir, ".gitignore")
            .lines()
            .map(|l| l.trim().trim_matches('/').to_owned())
            .collect();
        for tool_output in [
            "target",
            "build",
            ".aws-sam",
            ".runway",
            ".wrangler",
            "node_modules",
            ".dev.vars",
            ".env",
        ] {
            assert!(
                ignored.iter().any(|l| l == tool_output),
                "{tool_output} is not ignored: {ignored:?}"
            );
        }

        let toolchain = read(&dir, "rust-toolchain.toml");
        let targets = array_value(&toolchain, "targets").unwrap_or_default();
        assert!(
            targets.contains("\"wasm32-unknown-unknown\"")
                && targets.contains("\"aarch64-unknown-linux-gnu\""),
            "{toolchain}"
        );
        assert_eq!(
            quoted_value(&toolchain, "channel"),
            quoted_value(TOOLCHAIN, "channel")
        );
    }

    #[test]
    fn beside_the_checkout_the_path_is_relative_elsewhere_absolute() {
        let scratch = Scratch::new("paths");
        let checkout = scratch.0.join("src/runway");
        std::fs::create_dir_all(&checkout).unwrap();
        let source = RunwaySource::Checkout(checkout.clone());
        let beside = scratch.0.join("agents/flight-desk");
        let created = create(&beside, None, &source).unwrap();
        assert!(created.note.is_none());
        let manifest = read(&beside, "Cargo.toml");
        assert!(
            manifest.contains("runway-core = { path = \"../../src/runway/core\" }")
                && manifest.contains(
                    "runway-cloudflare = { path = \"../../src/runway/cloudflare\", features = [\"model\"] }"
                ),
            "{manifest}"
        );
        assert!(!manifest.contains("[workspace]"), "{manifest}");
        assert!(
            read(&beside, "README.md")
                .contains("cargo install --profile fast --path ../../src/runway/server"),
        );

        // Inside the checkout: relative, and a workspace of its own.
        let inside = checkout.join("examples/desk");
        create(&inside, None, &source).unwrap();
        let manifest = read(&inside, "Cargo.toml");
        assert!(
            manifest.contains("{ path = \"../../server\" }"),
            "{manifest}"
        );
        assert!(manifest.contains("\n[workspace]\n"), "{manifest}");

        // Nothing in common but the root: absolute, with a note saying what that means.
        assert_eq!(
            checkout_path(Path::new("/work/runway"), Path::new("/tmp/x/desk")),
            Path::new("/work/runway")
        );
        assert_eq!(
            checkout_path(Path::new("/home/a/runway"), Path::new("/home/a/desk")),
            Path::new("../runway")
        );
        assert_eq!(
            absolute_clean(&scratch.0.join("agents/./x/../flight-desk")).unwrap(),
            beside
        );
    }

    #[test]
    fn a_fork_or_a_published_version() {
        let scratch = Scratch::new("sources");
        let git = RunwaySource::from_flags(
            Some("https://git.example.com/team/runway.git".into()),
            Some("v0.1.0".into()),
            None,
        )
        .unwrap();
        let dir = scratch.0.join("forked");
        let created = create(&dir, None, &git).unwrap();
        assert!(created.note.is_none());
        let manifest = read(&dir, "Cargo.toml");
        assert!(
            manifest.contains(
                "runway-lambda = { git = \"https://git.example.com/team/runway.git\", rev = \"v0.1.0\" }"
            ),
            "{manifest}"
        );
        // The tested versions of everything else (cargo re-resolves only runway's own crates).
        assert!(dir.join("Cargo.lock").exists());
        assert!(read(&dir, "README.md").contains(
            "cargo install --profile fast --git https://git.example.com/team/runway.git --rev v0.1.0 runway"
        ));

        let published = RunwaySource::from_flags(None, None, Some("0.1.0".into())).unwrap();
        let dir = scratch.0.join("published");
        create(&dir, None, &published).unwrap();
        let manifest = read(&dir, "Cargo.toml");
        for (_, package) in RUNWAY_CRATES {
            assert!(
                manifest.contains(&format!("{package} = {{ version = \"=0.1.0\"")),
                "{package}: {manifest}"
            );
        }
        assert!(
            read(&dir, "README.md").contains("cargo install --profile fast runway --version 0.1.0")
        );

        for (git, rev, version) in [
            (Some("u"), None, Some("0.1.0")),
            (None, Some("main"), None),
            (None, None, Some("0.1")),
            (None, None, Some("latest")),
            (Some(" "), None, None),
        ] {
            assert!(
                RunwaySource::from_flags(
                    git.map(Into::into),
                    rev.map(Into::into),
                    version.map(Into::into)
                )
                .is_err(),
                "{git:?} {rev:?} {version:?}"
            );
        }
        // Built from this checkout, the default is the checkout.
        assert!(matches!(
            RunwaySource::from_flags(None, None, None).unwrap(),
            RunwaySource::Checkout(_)
        ));
    }

    /// A git or version dependency finds each crate by its package name: the names written are
    /// the checkout's, in the directories the path form uses.
    #[test]
    fn the_crates_depended_on_are_runways_packages() {
        let RunwaySource::Checkout(checkout) = RunwaySource::default_for_build() else {
            panic!("built from a checkout");
        };
        for (dir, package) in RUNWAY_CRATES {
            let manifest = std::fs::read_to_string(checkout.join(dir).join("Cargo.toml")).unwrap();
            assert_eq!(
                quoted_value(&manifest, "name"),
                Some(package),
                "{dir}/Cargo.toml"
            );
        }
    }

    #[test]
    fn the_sam_template_is_runways_own_serving_the_crates_agent() {
        let t = sam_template(SAM_TEMPLATE, "flight-desk")
            .expect("runway's template has what is edited");
        assert!(!t.contains("AgentName"), "{t}");
        for p in BUILTIN_MODEL_PARAMETERS {
            assert!(!t.contains(p), "{p} is the built-in model agent's: {t}");
        }
        // The model key's parameter stays, for a workers file's model workers
        // (`${RUNWAY_MODEL_API_KEY}`), with its permission.
        for kept in [
            "  ModelApiKeyParameterName:",
            "RUNWAY_MODEL_API_KEY_SSM_PARAMETER: !Ref ModelApiKeyParameterName",
            "HasModelKey: !Not",
            "Sid: ModelApiKey",
        ] {
            assert!(t.contains(kept), "{kept}: {t}");
        }
        assert!(!t.contains("RUNWAY_MODEL_BASE_URL"), "{t}");
        assert!(t.contains("      CodeUri: .\n"), "{t}");
        // Everything else is runway's, in order: what was dropped is only the parameter's
        // block and the environment line naming it.
        let mut generated = t.lines().peekable();
        let mut dropped = Vec::new();
        for line in SAM_TEMPLATE.lines() {
            let expected = line
                .replace("CodeUri: ../..", "CodeUri: .")
                .replace(RUNWAY_AUTH_PARAMETER, "/flight-desk/auth-headers")
                .replace("the one agent of AgentName", "the crate's agent");
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
