//! [`InitError`]: why the function could not start, whichever step of init found it.

/// Why the function could not start. Lambda reports it as an init error and retries init on
/// the next invocation; nothing is ever served without the configured auth header set.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A `RUNWAY_*` setting is invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// The SSM parameter holding the auth header set could not be read.
    #[error("cannot read the auth header set from SSM parameter {name}: {reason}")]
    AuthParameter {
        /// The parameter's name.
        name: String,
        /// What went wrong (never the value).
        reason: String,
    },
    /// The SSM parameter holding a setting (`NAME_SSM_PARAMETER`: a model agent's key, a
    /// workers file's `${NAME}`) could not be read, or is empty.
    #[error(
        "cannot read {setting} from SSM parameter {parameter} (named by {setting}_SSM_PARAMETER): {reason}"
    )]
    SettingParameter {
        /// The setting (`NAME`).
        setting: String,
        /// The parameter's name.
        parameter: String,
        /// What went wrong (never the value).
        reason: String,
    },
}
