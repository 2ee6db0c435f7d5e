//! [`McpServer`]: one `[[mcp]]` entry of the tools file, checked at start-up.

use std::time::Duration;

use crate::model::secret::Secret;

/// An MCP server whose tools the model may call (Streamable HTTP transport).
///
/// `Debug` never shows a header value.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// The prefix of its tools' names: the server's tool `search` is offered to the model as
    /// `{name}_search` (`^[A-Za-z0-9-]{1,32}$`, unique).
    pub name: String,
    /// The server's MCP endpoint (Streamable HTTP), e.g. `https://mcp.example.com/mcp`.
    pub url: url::Url,
    /// Sent with every request to `url`, and only to its origin (redirects are not followed);
    /// values had their `${NAME}` references filled from the settings.
    pub headers: Vec<(http::HeaderName, Secret)>,
    /// The server's tools the model may use (by the server's own names); `None`: all.
    pub allow: Option<Vec<String>>,
    /// Which of its tools ask the user first (a `review` interrupt).
    pub approval: McpApproval,
    /// How long one call may take; `None`: the agent's tool timeout. Never past the turn's
    /// deadline.
    pub timeout: Option<Duration>,
    /// `auth = "KEY"`: every request (its tool list too) goes as the person chatting, with
    /// their access token at provider `KEY` as `Authorization: Bearer …` (replacing a
    /// configured `Authorization` header); sessions are kept per workspace and user.
    /// `auth = "oauth"` in the tools file (the server's own authorization, discovered from
    /// its URL) is the provider `mcp:{name}` here.
    pub auth: Option<String>,
}

/// Which tools of an MCP server need the user's approval before they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpApproval {
    /// None (`approval = false`, the default).
    Never,
    /// Every one (`approval = true`).
    Always,
    /// These, by the server's own names (`approval = ["delete_issue"]`). A name the server
    /// does not list makes every tool of that server ask (a typo must not let a tool run
    /// unapproved).
    Only(Vec<String>),
}

impl McpServer {
    /// True if the server's tool `remote` (its own name) asks the user first, given every
    /// tool name the server listed.
    pub(crate) fn needs_approval(&self, remote: &str, listed: &[String]) -> bool {
        match &self.approval {
            McpApproval::Never => false,
            McpApproval::Always => true,
            McpApproval::Only(names) => {
                names.iter().any(|n| n == remote) || names.iter().any(|n| !listed.contains(n))
            }
        }
    }

    /// True if the model may use the server's tool `remote`.
    pub(crate) fn allows(&self, remote: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == remote))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(approval: McpApproval) -> McpServer {
        McpServer {
            name: "crm".into(),
            url: "https://mcp.example.com/mcp".parse().unwrap(),
            headers: Vec::new(),
            allow: None,
            approval,
            timeout: None,
            auth: None,
        }
    }

    #[test]
    fn an_approval_list_naming_an_unknown_tool_gates_every_tool() {
        let listed = vec!["search".to_owned(), "delete".to_owned()];
        let s = server(McpApproval::Only(vec!["delete".into()]));
        assert!(s.needs_approval("delete", &listed));
        assert!(!s.needs_approval("search", &listed));
        let typo = server(McpApproval::Only(vec!["delte".into()]));
        assert!(typo.needs_approval("search", &listed));
        assert!(typo.needs_approval("delete", &listed));
        assert!(server(McpApproval::Always).needs_approval("search", &listed));
        assert!(!server(McpApproval::Never).needs_approval("delete", &listed));
    }
}
