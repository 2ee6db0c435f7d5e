//! What a [`ModelAgent`](super::ModelAgent) is configured with: in code, or from the
//! `RUNWAY_MODEL_*` settings.

use super::attachment_intake::AttachmentSettings;
use super::mcp::McpServer;
use super::secret::Secret;
use super::tools_file::{HttpTool, ToolsFileError, parse_tools};

/// The settings a model-backed agent reads (see [`ModelSettings::from_lookup`]).
pub const SETTING_NAMES: [&str; 10] = [
    "RUNWAY_MODEL_BASE_URL",
    "RUNWAY_MODEL",
    "RUNWAY_MODEL_API_KEY",
    "RUNWAY_SYSTEM_PROMPT",
    "RUNWAY_TOOLS_FILE",
    "RUNWAY_TOOLS",
    crate::settings::ALLOW_LOOPBACK,
    "RUNWAY_ATTACHMENTS_MAX_BYTES",
    "RUNWAY_MAX_PARALLEL_TOOL_CALLS",
    "RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES",
];

/// Largest `RUNWAY_MAX_PARALLEL_TOOL_CALLS` accepted.
pub const MAX_PARALLEL_TOOL_CALLS: usize = 32;

/// Largest `RUNWAY_ATTACHMENTS_MAX_BYTES` accepted (a file is held in memory, and sent to
/// the model base64-encoded).
pub const MAX_ATTACHMENT_BYTES: usize = 20 * 1024 * 1024;

/// How the model agent talks to an OpenAI-compatible chat-completions endpoint.
///
/// `Debug` never shows the API key or a tool's header values.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    /// Base URL; the agent POSTs `{base_url}/chat/completions` (e.g.
    /// `https://api.openai.com/v1`, or `http://127.0.0.1:11434/v1` for Ollama).
    pub base_url: url::Url,
    /// The model name sent in each request.
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<Secret>,
    /// Sent first in every request; never stored with a thread.
    pub system_prompt: Option<String>,
    /// HTTP tools the model may call.
    pub tools: Vec<HttpTool>,
    /// MCP servers whose tools the model may call (listed when a turn needs them).
    pub mcp: Vec<McpServer>,
    /// OAuth providers the tools act as the user with (`[providers.KEY]` of the tools file):
    /// the server serves them with `Runway::with_providers`.
    pub providers: runway_core::connect::provider::Providers,
    /// The only tools the model is offered and may call, by the names it sees (an HTTP tool's
    /// `name`, an MCP tool's `{server}_{tool}`); `None`: every tool above. A workspace's
    /// `tools_allowed` (workers file).
    pub tools_allowed: Option<Vec<String>>,
    /// Model calls per turn at most (each tool round is one more call). Default 8.
    pub max_rounds: usize,
    /// Budget of the stored transcript sent back to the model, in bytes of JSON (default
    /// 40 KiB, inside the thread state's 64 KiB): the oldest messages go first, a tool call
    /// never without its result.
    pub window_bytes: usize,
    /// Longest tool result kept and sent to the model, in bytes (default 8 KiB).
    pub max_tool_result_bytes: usize,
    /// How long one tool call may take (default 30 s, and never past the turn's deadline).
    pub tool_timeout: std::time::Duration,
    /// Tool calls of one model reply that are run (or asked about), all at once (default 4,
    /// `RUNWAY_MAX_PARALLEL_TOOL_CALLS`): the model is told the rest were refused.
    pub max_tool_calls_per_reply: usize,
    /// Longest arguments of one tool call, in bytes (default 64 KiB): a longer call is not
    /// run, and the model is told why.
    pub max_tool_argument_bytes: usize,
    /// Most bytes of one model response (the whole event stream; default 8 MiB): past it the
    /// answer is stopped with `RUN_ERROR`.
    pub max_response_bytes: usize,
    /// How user attachments are downloaded and used.
    pub attachments: AttachmentSettings,
}

/// A model setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelSettingsError {
    /// A required setting is missing.
    #[error("{0} is required by the model agent")]
    Missing(&'static str),
    /// A setting is present but unusable.
    #[error("{setting}: {reason}")]
    Invalid {
        /// The setting.
        setting: &'static str,
        /// Why.
        reason: String,
    },
    /// The tools file is refused.
    #[error("tools: {0}")]
    Tools(#[from] ToolsFileError),
}

impl ModelSettings {
    /// Settings for `model` at `base_url`, with no key, prompt or tools.
    ///
    /// # Errors
    /// `base_url` is not an absolute http(s) URL.
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, ModelSettingsError> {
        Ok(Self {
            base_url: parse_base_url(base_url)?,
            model: model.into(),
            api_key: None,
            system_prompt: None,
            tools: Vec::new(),
            mcp: Vec::new(),
            providers: Default::default(),
            tools_allowed: None,
            max_rounds: 8,
            window_bytes: 40 * 1024,
            max_tool_result_bytes: 8 * 1024,
            tool_timeout: std::time::Duration::from_secs(30),
            max_tool_calls_per_reply: 4,
            max_tool_argument_bytes: 64 * 1024,
            max_response_bytes: 8 * 1024 * 1024,
            attachments: AttachmentSettings::default(),
        })
    }

    /// True if the model may be offered, and may call, the tool it sees as `name`
    /// ([`ModelSettings::tools_allowed`]).
    pub fn allows_tool(&self, name: &str) -> bool {
        self.tools_allowed
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|a| a == name))
    }

    /// Reads `RUNWAY_MODEL_BASE_URL`, `RUNWAY_MODEL` (both required), `RUNWAY_MODEL_API_KEY`,
    /// `RUNWAY_SYSTEM_PROMPT`, and the tools from `RUNWAY_TOOLS` (TOML inline) or
    /// `RUNWAY_TOOLS_FILE` (a path, read with `read_file`; set one, not both). `${NAME}` in a
    /// tool's header values is read through `get` too.
    ///
    /// Every problem refuses to start: a setting present but unusable never falls back to
    /// something else.
    ///
    /// # Errors
    /// The first setting that is missing or unusable; for the tools, with line and column.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        read_file: impl Fn(&str) -> Result<String, String>,
    ) -> Result<Self, ModelSettingsError> {
        let non_empty = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let base = non_empty("RUNWAY_MODEL_BASE_URL")
            .ok_or(ModelSettingsError::Missing("RUNWAY_MODEL_BASE_URL"))?;
        let model = non_empty("RUNWAY_MODEL").ok_or(ModelSettingsError::Missing("RUNWAY_MODEL"))?;
        let mut s = Self::new(base.trim(), model.trim())?;
        s.api_key = non_empty("RUNWAY_MODEL_API_KEY").map(|k| Secret::new(k.trim()));
        if let Some(k) = &s.api_key
            && http::HeaderValue::try_from(format!("Bearer {}", k.expose())).is_err()
        {
            return Err(ModelSettingsError::Invalid {
                setting: "RUNWAY_MODEL_API_KEY",
                reason: "not usable in an HTTP header".into(),
            });
        }
        s.system_prompt = non_empty("RUNWAY_SYSTEM_PROMPT");
        s.apply_deployment_settings(&get)?;
        let setting = |name: &str| get(name);
        let file = match (non_empty("RUNWAY_TOOLS"), non_empty("RUNWAY_TOOLS_FILE")) {
            (Some(_), Some(_)) => {
                return Err(ModelSettingsError::Invalid {
                    setting: "RUNWAY_TOOLS",
                    reason: "set RUNWAY_TOOLS or RUNWAY_TOOLS_FILE, not both".into(),
                });
            }
            (Some(inline), None) => parse_tools(&inline, "RUNWAY_TOOLS", &setting)?,
            (None, Some(path)) => {
                let path = path.trim();
                let text = read_file(path).map_err(|e| ModelSettingsError::Invalid {
                    setting: "RUNWAY_TOOLS_FILE",
                    reason: format!("cannot read {path}: {e}"),
                })?;
                parse_tools(&text, path, &setting)?
            }
            (None, None) => Default::default(),
        };
        s.tools = file.tools;
        s.mcp = file.mcp;
        s.providers = file.providers;
        Ok(s)
    }

    /// Applies the settings every model agent of a deployment shares, the built-in one and a
    /// workers file's model workers alike: how attachments are downloaded
    /// (`RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK`, `RUNWAY_ATTACHMENTS_MAX_BYTES`,
    /// `RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES`) and how many tool calls of one reply run
    /// (`RUNWAY_MAX_PARALLEL_TOOL_CALLS`).
    ///
    /// # Errors
    /// The first of them that is set but unusable.
    pub(crate) fn apply_deployment_settings(
        &mut self,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ModelSettingsError> {
        let non_empty = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        self.attachments.policy.allow_loopback =
            crate::settings::allow_loopback(get).map_err(|e| ModelSettingsError::Invalid {
                setting: e.setting,
                reason: e.reason.into(),
            })?;
        if let Some(v) = non_empty("RUNWAY_ATTACHMENTS_MAX_BYTES") {
            self.attachments.max_bytes = v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_ATTACHMENT_BYTES).contains(n))
                .ok_or_else(|| ModelSettingsError::Invalid {
                    setting: "RUNWAY_ATTACHMENTS_MAX_BYTES",
                    reason: format!("must be a number of bytes from 1 to {MAX_ATTACHMENT_BYTES}"),
                })?;
        }
        if let Some(v) = non_empty("RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES") {
            self.attachments.max_thread_bytes = v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| ModelSettingsError::Invalid {
                    setting: "RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES",
                    reason: "must be a number of bytes".into(),
                })?;
        }
        if let Some(v) = non_empty("RUNWAY_MAX_PARALLEL_TOOL_CALLS") {
            self.max_tool_calls_per_reply = v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_PARALLEL_TOOL_CALLS).contains(n))
                .ok_or_else(|| ModelSettingsError::Invalid {
                    setting: "RUNWAY_MAX_PARALLEL_TOOL_CALLS",
                    reason: format!("must be a number from 1 to {MAX_PARALLEL_TOOL_CALLS}"),
                })?;
        }
        Ok(())
    }

    /// `{base_url}/chat/completions`.
    pub fn completions_url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.base_url.as_str().trim_end_matches('/')
        )
    }

    /// Who serves the model, as a label (AG-UI's `usage[].provider`): a well-known endpoint by
    /// its host (`openai`, `azure`, `mistral`, `groq`, `openrouter`, `deepseek`, `together`,
    /// `fireworks`, `google`, `xai`), any other `openai-compatible` (a host is not a label, and
    /// may name a private deployment).
    pub fn provider(&self) -> &'static str {
        let host = self.base_url.host_str().unwrap_or_default();
        let is = |domain: &str| {
            host == domain
                || host
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.ends_with('.'))
        };
        match () {
            () if is("openai.com") => "openai",
            () if is("openai.azure.com") || is("services.ai.azure.com") => "azure",
            () if is("mistral.ai") => "mistral",
            () if is("groq.com") => "groq",
            () if is("openrouter.ai") => "openrouter",
            () if is("deepseek.com") => "deepseek",
            () if is("together.xyz") => "together",
            () if is("fireworks.ai") => "fireworks",
            () if is("generativelanguage.googleapis.com") => "google",
            () if is("x.ai") => "xai",
            () => "openai-compatible",
        }
    }
}

fn parse_base_url(raw: &str) -> Result<url::Url, ModelSettingsError> {
    let invalid = |reason: &str| ModelSettingsError::Invalid {
        setting: "RUNWAY_MODEL_BASE_URL",
        reason: reason.into(),
    };
    let url = url::Url::parse(raw).map_err(|_| invalid("not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid("must be an absolute http or https URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "must not embed credentials (use RUNWAY_MODEL_API_KEY)",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_is_a_label_from_well_known_hosts_only() {
        for (url, provider) in [
            ("https://api.openai.com/v1", "openai"),
            (
                "https://acme.openai.azure.com/openai/deployments/x",
                "azure",
            ),
            ("https://api.mistral.ai/v1", "mistral"),
            ("https://evilopenai.com/v1", "openai-compatible"),
            ("http://127.0.0.1:11434/v1", "openai-compatible"),
            ("https://llm.internal.acme.example/v1", "openai-compatible"),
        ] {
            let s = ModelSettings::new(url, "m").unwrap();
            assert_eq!(s.provider(), provider, "{url}");
        }
    }
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn no_files(_: &str) -> Result<String, String> {
        Err("no such file".into())
    }

    #[test]
    fn reads_every_setting_and_hides_the_key() {
        let s = ModelSettings::from_lookup(
            lookup(&[
                ("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:11434/v1/"),
                ("RUNWAY_MODEL", "llama3"),
                ("RUNWAY_MODEL_API_KEY", "sk-very-secret"),
                ("RUNWAY_SYSTEM_PROMPT", "Be brief."),
                (
                    "RUNWAY_TOOLS",
                    "[[tools]]\nname = \"t\"\nmethod = \"GET\"\nurl = \"http://127.0.0.1:9/x\"\n",
                ),
            ]),
            no_files,
        )
        .unwrap();
        assert_eq!(
            s.completions_url(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(s.model, "llama3");
        assert_eq!(s.api_key.as_ref().unwrap().expose(), "sk-very-secret");
        assert_eq!(s.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(s.tools.len(), 1);
        let debug = format!("{s:?}");
        assert!(!debug.contains("sk-very-secret"), "{debug}");
    }

    #[test]
    fn attachment_settings_are_read_and_fail_closed() {
        let base = [
            ("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:1/v1"),
            ("RUNWAY_MODEL", "m"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            ModelSettings::from_lookup(lookup(&all), no_files)
        };
        let s = with(&[]).unwrap();
        assert!(!s.attachments.policy.allow_loopback);
        assert_eq!(s.attachments.max_bytes, 4 * 1024 * 1024);
        let s = with(&[
            ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "1"),
            ("RUNWAY_ATTACHMENTS_MAX_BYTES", "2000"),
        ])
        .unwrap();
        assert!(s.attachments.policy.allow_loopback);
        assert_eq!(s.attachments.max_bytes, 2000);
        assert_eq!(s.max_tool_calls_per_reply, 4);
        let s = with(&[("RUNWAY_MAX_PARALLEL_TOOL_CALLS", "2")]).unwrap();
        assert_eq!(s.max_tool_calls_per_reply, 2);
        assert!(
            !with(&[("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "0")])
                .unwrap()
                .attachments
                .policy
                .allow_loopback
        );
        for (name, bad) in [
            ("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK", "yes"),
            ("RUNWAY_ATTACHMENTS_MAX_BYTES", "0"),
            ("RUNWAY_ATTACHMENTS_MAX_BYTES", "4MB"),
            ("RUNWAY_ATTACHMENTS_MAX_BYTES", "999999999"),
            ("RUNWAY_MAX_PARALLEL_TOOL_CALLS", "0"),
            ("RUNWAY_MAX_PARALLEL_TOOL_CALLS", "33"),
        ] {
            let e = with(&[(name, bad)]).unwrap_err();
            assert!(e.to_string().starts_with(name), "{name}={bad}: {e}");
        }
    }

    #[test]
    fn missing_or_bad_settings_refuse_to_start() {
        let e = ModelSettings::from_lookup(lookup(&[("RUNWAY_MODEL", "m")]), no_files);
        assert_eq!(
            e.unwrap_err(),
            ModelSettingsError::Missing("RUNWAY_MODEL_BASE_URL")
        );
        let e = ModelSettings::from_lookup(
            lookup(&[("RUNWAY_MODEL_BASE_URL", "ftp://x/"), ("RUNWAY_MODEL", "m")]),
            no_files,
        );
        assert!(matches!(e, Err(ModelSettingsError::Invalid { .. })));
        let e = ModelSettings::from_lookup(
            lookup(&[
                ("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:1/v1"),
                ("RUNWAY_MODEL", "m"),
                ("RUNWAY_TOOLS_FILE", "/nope.toml"),
            ]),
            no_files,
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nope.toml"), "{e}");
        let e = ModelSettings::from_lookup(
            lookup(&[
                ("RUNWAY_MODEL_BASE_URL", "http://127.0.0.1:1/v1"),
                ("RUNWAY_MODEL", "m"),
                ("RUNWAY_TOOLS_FILE", "tools.toml"),
            ]),
            |_| Ok("[[tools]]\nname = \"t\"\n\nmethod = 3\n".into()),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("tools: tools.toml, line 4"),
            "{e}"
        );
    }
}
