//! The built-in agents' own settings, each parsed here and only here: which agent an adapter
//! serves ([`AGENT`]), whether a workers file names them instead ([`workers_file_set`]), and
//! the test-only switch letting the model agent download attachment links that point at this
//! machine ([`ALLOW_LOOPBACK`]). The server, the Lambda `bootstrap`
//! and the repo's Worker read them through these functions, so they agree on defaults and on
//! what a value means.

/// The setting naming the built-in agent an adapter serves (`demo`, `echo`, `http-probe`,
/// `model`).
pub const AGENT: &str = "RUNWAY_AGENT";

/// The agent served when [`AGENT`] is unset or empty.
pub const DEFAULT_AGENT: &str = "demo";

/// The setting naming a workers file's path (many Digital Workers on one deployment; the
/// workers file needs the crate's `model` feature).
pub const WORKERS_FILE_SETTING: &str = "RUNWAY_WORKERS_FILE";

/// The setting holding the workers file itself (a wrangler var or a SAM parameter).
pub const WORKERS_SETTING: &str = "RUNWAY_WORKERS";

/// `RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK`: `1` lets the model agent download attachment links to
/// loopback addresses (plain `http` too). For tests only.
pub const ALLOW_LOOPBACK: &str = "RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK";

/// The agent named by [`AGENT`] in `get`, trimmed, or [`DEFAULT_AGENT`].
pub fn agent_name(get: impl Fn(&str) -> Option<String>) -> String {
    get(AGENT)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_AGENT.to_owned())
}

/// True when a workers file is configured: [`WORKERS_FILE_SETTING`] or [`WORKERS_SETTING`] is
/// set and not blank. The file then names each worker's agent, and [`AGENT`] is not used.
pub fn workers_file_set(get: impl Fn(&str) -> Option<String>) -> bool {
    [WORKERS_FILE_SETTING, WORKERS_SETTING]
        .iter()
        .any(|k| get(k).is_some_and(|v| !v.trim().is_empty()))
}

/// [`workers_file_set`] in the process environment (a native binary: `runway serve`, Lambda).
/// A value that is not UTF-8 counts as set: the file's limits are never skipped (reading it
/// then fails).
pub fn workers_file_in_env() -> bool {
    workers_file_set(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
}

/// A setting present but unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {reason}")]
pub struct InvalidSetting {
    /// The setting.
    pub setting: &'static str,
    /// What a usable value is.
    pub reason: &'static str,
}

/// [`ALLOW_LOOPBACK`] from `get`: `1` or `true` is on; `0`, `false`, empty or unset is off.
///
/// # Errors
/// Any other value: a security setting that does not parse never falls back to either side.
pub fn allow_loopback(get: impl Fn(&str) -> Option<String>) -> Result<bool, InvalidSetting> {
    match get(ALLOW_LOOPBACK).as_deref().map(str::trim) {
        None | Some("" | "0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(_) => Err(InvalidSetting {
            setting: ALLOW_LOOPBACK,
            reason: "must be 1 or 0",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_agent_defaults_to_demo_when_unset_or_blank() {
        assert_eq!(agent_name(with(&[])), "demo");
        assert_eq!(agent_name(with(&[(AGENT, "  ")])), "demo");
        assert_eq!(agent_name(with(&[(AGENT, " model ")])), "model");
    }

    #[test]
    fn a_workers_file_is_set_by_either_setting_unless_blank() {
        assert!(!workers_file_set(with(&[])));
        assert!(!workers_file_set(with(&[(WORKERS_SETTING, " \n")])));
        assert!(workers_file_set(with(&[(WORKERS_SETTING, "[workers]")])));
        assert!(workers_file_set(with(&[(WORKERS_FILE_SETTING, "w.toml")])));
    }

    #[test]
    fn allow_loopback_is_parsed_strictly() {
        assert_eq!(allow_loopback(with(&[])), Ok(false));
        for off in ["", "0", "false", " 0 "] {
            assert_eq!(allow_loopback(with(&[(ALLOW_LOOPBACK, off)])), Ok(false));
        }
        for on in ["1", "true", " 1\n"] {
            assert_eq!(allow_loopback(with(&[(ALLOW_LOOPBACK, on)])), Ok(true));
        }
        for bad in ["yes", "on", "TRUE", "2"] {
            assert!(
                allow_loopback(with(&[(ALLOW_LOOPBACK, bad)])).is_err(),
                "{bad}"
            );
        }
    }
}
