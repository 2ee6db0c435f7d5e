//! [`Redactor`]: the model agent's secrets (the API key, the HTTP tools' and MCP servers'
//! header values) taken out of every error text it logs, returns or hands to the model. An
//! upstream may echo a credential in an error (a 401 body, an in-stream error object, a tool's
//! error page); it must reach neither a log line nor the user.

use super::settings::ModelSettings;

/// Secrets shorter than this are not redacted: they are not credentials (a header such as
/// `X-Version: 2`), and cutting them out of every text would garble it.
const MIN_SECRET_CHARS: usize = 8;

/// Replaces each configured secret in a text with `<redacted>`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of `settings`: the API key, and each header value of a tool or an MCP
    /// server, whole and each of its words (`Bearer tok-123` is also echoed as `tok-123`).
    pub(crate) fn of(settings: &ModelSettings) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        let tool_headers = settings.tools.iter().flat_map(|t| &t.headers);
        let mcp_headers = settings.mcp.iter().flat_map(|m| &m.headers);
        let values = settings
            .api_key
            .iter()
            .chain(tool_headers.chain(mcp_headers).map(|(_, v)| v));
        for v in values {
            let v = v.expose();
            secrets.push(v.to_owned());
            secrets.extend(v.split_whitespace().map(str::to_owned));
        }
        secrets.retain(|s| s.chars().count() >= MIN_SECRET_CHARS);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with every secret replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "<redacted>");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::secret::Secret;

    #[test]
    fn the_key_and_tool_header_values_are_redacted_whole_and_by_word() {
        let mut s = ModelSettings::new("http://127.0.0.1:1/v1", "m").unwrap();
        s.api_key = Some(Secret::new("sk-abcdefgh1234"));
        s.tools = crate::model::parse_tools(
            "[[tools]]\nname = \"t\"\nmethod = \"GET\"\nurl = \"http://127.0.0.1:9/x\"\n\
             headers = { Authorization = \"Bearer tok-secret-99\", X-V = \"2\" }\n",
            "t",
            &|_| None,
        )
        .unwrap()
        .tools;
        let r = Redactor::of(&s);
        assert_eq!(
            r.redact("Incorrect API key provided: sk-abcdefgh1234. Bearer tok-secret-99; tok-secret-99 v2"),
            "Incorrect API key provided: <redacted>. <redacted>; <redacted> v2"
        );
    }
}
