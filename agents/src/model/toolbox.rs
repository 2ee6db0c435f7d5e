//! [`Toolbox`]: the tools one turn may use, HTTP tools and MCP servers' tools alike, behind one
//! interface: what the model is told, which calls wait for the user's approval, and how a call
//! runs. Limits on calls (how many, how large, how long) apply here, to both kinds.

use std::time::Duration;

use serde_json::{Value, json};

use super::log_budget::LogBudget;
use super::mcp::{McpCatalog, McpServers, McpTool};
use super::redaction::Redactor;
use super::settings::ModelSettings;
use super::tool_runner::{TokenRefused, ToolLimits, run_tool};
use super::tools_file::HttpTool;
use super::transcript::ModelToolCall;
use runway_core::AccessToken;
use runway_core::http_client::Http;

/// One tool, of either kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tool<'a> {
    /// An HTTP endpoint from the tools file.
    Http(&'a HttpTool),
    /// A tool an MCP server listed for this turn.
    Mcp(&'a McpTool),
}

impl Tool<'_> {
    /// The name the model calls it by.
    pub(crate) fn name(&self) -> &str {
        match self {
            Self::Http(t) => &t.name,
            Self::Mcp(t) => &t.name,
        }
    }

    /// The provider whose token the call is sent with (`auth = "KEY"`), if any.
    pub(crate) fn auth(&self) -> Option<&str> {
        match self {
            Self::Http(t) => t.auth.as_deref(),
            Self::Mcp(_) => None,
        }
    }

    /// True if a call waits for the user's approval (a `review` interrupt).
    pub(crate) fn needs_approval(&self) -> bool {
        match self {
            Self::Http(t) => t.approval,
            Self::Mcp(t) => t.approval,
        }
    }

    /// Its entry in the request's `tools`.
    fn declaration(&self) -> Value {
        let (description, parameters) = match self {
            Self::Http(t) => (&t.description, &t.parameters),
            Self::Mcp(t) => (&t.description, &t.parameters),
        };
        json!({"type": "function", "function": {
            "name": self.name(),
            "description": description,
            "parameters": parameters,
        }})
    }
}

/// The tools of one turn.
pub(crate) struct Toolbox<'a> {
    settings: &'a ModelSettings,
    servers: &'a McpServers,
    redactor: &'a Redactor,
    /// The MCP tools listed now, less those [`ModelSettings::tools_allowed`] leaves out.
    mcp: McpCatalog,
    /// The turn's HTTP client for MCP requests (following no redirect).
    mcp_http: Http,
}

impl<'a> Toolbox<'a> {
    /// The HTTP tools, and the tools every MCP server lists now (servers that cannot be
    /// reached are left out, with a note for the model), less those the settings'
    /// `tools_allowed` leaves out. `mcp_http` is the turn's client for MCP requests; without
    /// one (no client that refuses redirects), the servers are left out. What an MCP server
    /// says goes through `redactor` before it is logged or reaches the model.
    pub(crate) async fn for_turn(
        settings: &'a ModelSettings,
        servers: &'a McpServers,
        redactor: &'a Redactor,
        mcp_http: Option<Http>,
        now_ms: u64,
    ) -> Self {
        let mut mcp = McpCatalog::default();
        let mcp_http = match mcp_http {
            _ if servers.is_empty() => Http::default(),
            Some(http) => {
                let taken: Vec<&str> = settings.tools.iter().map(|t| t.name.as_str()).collect();
                mcp = servers
                    .catalog(&http, now_ms, settings.tool_timeout, &taken, redactor)
                    .await;
                mcp.tools.retain(|t| settings.allows_tool(&t.name));
                http
            }
            None => {
                tracing::warn!(
                    "MCP servers are configured but the agent has no client that refuses \
                     redirects (ModelAgent::with_mcp_client): their tools are not offered"
                );
                mcp.notes.push(
                    "The MCP servers' tools are unavailable: this deployment has no HTTP \
                     client for them."
                        .into(),
                );
                Http::default()
            }
        };
        Self {
            settings,
            servers,
            redactor,
            mcp,
            mcp_http,
        }
    }

    /// The HTTP tools this turn offers.
    fn http_tools(&self) -> impl Iterator<Item = &'a HttpTool> + 'a {
        let settings = self.settings;
        settings
            .tools
            .iter()
            .filter(move |t| settings.allows_tool(&t.name))
    }

    /// The tool the model calls `name`, if this turn offers it (a call of any other is
    /// refused).
    pub(crate) fn find(&self, name: &str) -> Option<Tool<'_>> {
        self.http_tools()
            .find(|t| t.name == name)
            .map(Tool::Http)
            .or_else(|| {
                self.mcp
                    .tools
                    .iter()
                    .find(|t| t.name == name)
                    .map(Tool::Mcp)
            })
    }

    /// Every tool's entry for the request's `tools` (empty: send none).
    pub(crate) fn declarations(&self) -> Vec<Value> {
        let http = self.http_tools().map(Tool::Http);
        let mcp = self.mcp.tools.iter().map(Tool::Mcp);
        http.chain(mcp).map(|t| t.declaration()).collect()
    }

    /// What the model should know about tools missing from this turn.
    pub(crate) fn notes(&self) -> &[String] {
        &self.mcp.notes
    }

    /// Runs `call` and returns what the model reads: the result, or what went wrong, cut to
    /// the settings' result size. HTTP tools go through `tool_http`, the turn's client that
    /// follows no redirect itself; without one they are not called.
    ///
    /// # Errors
    /// [`TokenRefused`]: the call, sent with the user's token `bearer`, was answered 401.
    pub(crate) async fn run(
        &self,
        tool_http: Option<&Http>,
        call: &ModelToolCall,
        bearer: Option<&AccessToken>,
        log: &LogBudget,
    ) -> Result<String, TokenRefused> {
        let s = self.settings;
        let arguments = &call.function.arguments;
        match self.find(&call.function.name) {
            Some(Tool::Http(tool)) => match tool_http {
                Some(http) => {
                    let limits = ToolLimits {
                        timeout: turn_bounded(http, s.tool_timeout),
                        max_result_bytes: s.max_tool_result_bytes,
                    };
                    run_tool(http, tool, arguments, bearer, limits, log).await
                }
                None => Ok(
                    "Error: this runtime gave the agent no HTTP client for tools, so \
                            the tool was not called."
                        .to_owned(),
                ),
            },
            Some(Tool::Mcp(tool)) => Ok(self
                .servers
                .call(
                    &self.mcp_http,
                    tool,
                    arguments,
                    s.tool_timeout,
                    s.max_tool_result_bytes,
                    self.redactor,
                )
                .await),
            None => Ok(format!(
                "Error: there is no tool named {:?}.",
                call.function.name
            )),
        }
    }
}

/// `timeout`, never past the turn's deadline.
fn turn_bounded(http: &Http, timeout: Duration) -> Duration {
    http.time_left().map_or(timeout, |left| left.min(timeout))
}
