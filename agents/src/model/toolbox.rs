//! [`Toolbox`]: the tools one turn may use, HTTP tools, MCP servers' tools and the client's own
//! (AG-UI's frontend tools) alike, behind one interface: what the model is told, which calls
//! wait for the user's approval, which the client runs, and how a call runs. Limits on calls
//! (how many, how large, how long) apply here, to every kind.

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
use runway_core::protocol::ClientTool;

/// One tool, of either kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tool<'a> {
    /// An HTTP endpoint from the tools file.
    Http(&'a HttpTool),
    /// A tool an MCP server listed for this turn.
    Mcp(&'a McpTool),
    /// A tool the client offers and runs itself (`Turn::client_tools`).
    Client(&'a ClientTool),
}

impl Tool<'_> {
    /// The name the model calls it by.
    pub(crate) fn name(&self) -> &str {
        match self {
            Self::Http(t) => &t.name,
            Self::Mcp(t) => &t.name,
            Self::Client(t) => &t.name,
        }
    }

    /// True for a tool the client runs: its call is left for the client, never run here.
    pub(crate) fn is_client(&self) -> bool {
        matches!(self, Self::Client(_))
    }

    /// The provider whose token the call is sent with (`auth = "KEY"`), if any.
    pub(crate) fn auth(&self) -> Option<&str> {
        match self {
            Self::Http(t) => t.auth.as_deref(),
            Self::Mcp(_) | Self::Client(_) => None,
        }
    }

    /// True if a call waits for the user's approval (a `review` interrupt).
    pub(crate) fn needs_approval(&self) -> bool {
        match self {
            Self::Http(t) => t.approval,
            Self::Mcp(t) => t.approval,
            // The client runs it, and asks its user as it sees fit.
            Self::Client(_) => false,
        }
    }

    /// Its entry in the request's `tools`.
    fn declaration(&self) -> Value {
        let (description, parameters) = match self {
            Self::Http(t) => (&t.description, &t.parameters),
            Self::Mcp(t) => (&t.description, &t.parameters),
            Self::Client(t) => (&t.description, &t.parameters),
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
    /// The client's tools whose names no configured or MCP tool takes (the configured one
    /// wins a clash; the client's is not offered).
    client: Vec<ClientTool>,
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
            client: Vec::new(),
        }
    }

    /// Adds the client's tools (`Turn::client_tools`), less any whose name a tool of the
    /// deployment's takes: the configured tool wins, and the model is never offered two tools
    /// of one name.
    pub(crate) fn with_client_tools(mut self, tools: &[ClientTool]) -> Self {
        let mut clashes = 0usize;
        for tool in tools {
            if self.find(&tool.name).is_some() {
                clashes += 1;
            } else {
                self.client.push(tool.clone());
            }
        }
        if clashes > 0 {
            tracing::warn!(
                clashes,
                "client tools named as a configured tool are not offered: the configured one wins"
            );
        }
        self
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
            .or_else(|| {
                self.client
                    .iter()
                    .find(|t| t.name == name)
                    .map(Tool::Client)
            })
    }

    /// Every tool's entry for the request's `tools` (empty: send none).
    pub(crate) fn declarations(&self) -> Vec<Value> {
        let http = self.http_tools().map(Tool::Http);
        let mcp = self.mcp.tools.iter().map(Tool::Mcp);
        let client = self.client.iter().map(Tool::Client);
        http.chain(mcp)
            .chain(client)
            .map(|t| t.declaration())
            .collect()
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
            // The turn loop leaves these for the client; never sent anywhere from here.
            Some(Tool::Client(_)) => Ok("Error: this tool is run by the client.".to_owned()),
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
