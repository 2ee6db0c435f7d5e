//! [`Toolbox`]: the tools one turn may use, HTTP tools, MCP servers' tools and the client's own
//! (AG-UI's frontend tools) alike, behind one interface: what the model is told, which calls
//! wait for the user's approval, which the client runs, and how a call runs. Limits on calls
//! (how many, how large, how long) apply here, to every kind.

use std::time::Duration;

use serde_json::{Value, json};

use super::log_budget::LogBudget;
use super::mcp::{McpCatalog, McpServers, McpTool, Person, may_offer, person_of};
use super::redaction::Redactor;
use super::settings::ModelSettings;
use super::tool_runner::{TokenRefused, ToolLimits, run_tool};
use super::tools_file::HttpTool;
use super::transcript::ModelToolCall;
use runway_core::http_client::Http;
use runway_core::protocol::ClientTool;
use runway_core::{AccessToken, Turn};

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
            Self::Mcp(t) => t.auth.as_deref(),
            Self::Client(_) => None,
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
    /// Whom requests to MCP servers with `auth` go as.
    person: Option<Person>,
    /// The client's tools whose names no configured or MCP tool takes (the configured one
    /// wins a clash; the client's is not offered).
    client: Vec<ClientTool>,
}

impl<'a> Toolbox<'a> {
    /// The HTTP tools, and the tools every MCP server lists now (servers that cannot be
    /// reached are left out, with a note for the model), less those the settings'
    /// `tools_allowed` leaves out. `mcp_http` is the turn's client for MCP requests; without
    /// one (no client that refuses redirects), the servers are left out. What an MCP server
    /// says goes through `redactor` before it is logged or reaches the model. A server with
    /// `auth` is listed as `turn`'s user (see [`McpServers::catalog`]).
    pub(crate) async fn for_turn(
        turn: &Turn,
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
                    .catalog(
                        turn,
                        &http,
                        now_ms,
                        settings.tool_timeout,
                        &taken,
                        redactor,
                        &settings.providers,
                    )
                    .await;
                let allowed = |t: &McpTool| {
                    if t.connect_only {
                        // Offered where any of the server's tools may be.
                        settings.tools_allowed.as_ref().is_none_or(|allowed| {
                            settings
                                .mcp
                                .get(t.server)
                                .is_some_and(|s| allowed.iter().any(|n| may_offer(s, n)))
                        })
                    } else {
                        settings.allows_tool(&t.name)
                    }
                };
                mcp.tools.retain(allowed);
                mcp.stand_ins.retain(allowed);
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
            person: servers.acts_as_users().then(|| person_of(turn)).flatten(),
            client: Vec::new(),
        }
    }

    /// The provider a call of `name` left pending behind the `authorization` card needs: that
    /// of the tool this turn offers by that name, or, for a server with `auth` still offered
    /// as its stand-in (the user has not connected yet), that server's: the call waits
    /// behind the card again rather than failing as unknown.
    pub(crate) fn provider_of_pending(&self, name: &str) -> Option<String> {
        if let Some(tool) = self.find(name) {
            return tool.auth().map(str::to_owned);
        }
        self.mcp.to_connect.iter().find_map(|&i| {
            let server = self.settings.mcp.get(i)?;
            let prefix = format!("{}_", server.name);
            name.starts_with(&prefix)
                .then(|| server.auth.clone())
                .flatten()
        })
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
    /// refused), or the stand-in of a server with `auth` by that name.
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
                // A stand-in not offered in this turn: its server's tools are, so the user
                // connected since the model called it.
                self.mcp
                    .stand_ins
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
            Some(Tool::Mcp(tool)) if tool.connect_only => Ok(self.connected(tool)),
            Some(Tool::Mcp(tool)) => {
                self.servers
                    .call(
                        &self.mcp_http,
                        tool,
                        arguments,
                        bearer,
                        self.person.as_ref(),
                        s.tool_timeout,
                        s.max_tool_result_bytes,
                        self.redactor,
                    )
                    .await
            }
            // The turn loop leaves these for the client; never sent anywhere from here.
            Some(Tool::Client(_)) => Ok("Error: this tool is run by the client.".to_owned()),
            None => Ok(format!(
                "Error: there is no tool named {:?}.",
                call.function.name
            )),
        }
    }
}

impl Toolbox<'_> {
    /// What the model reads when the stand-in of a server with `auth` runs: the user's
    /// account is connected (the call got this far with their token).
    fn connected(&self, stand_in: &McpTool) -> String {
        let server = self.settings.mcp.get(stand_in.server);
        let name = server.map_or("", |s| s.name.as_str());
        let provider = stand_in
            .auth
            .as_deref()
            .and_then(|k| self.settings.providers.get(k))
            .map_or("The account", |p| p.name.as_str());
        let offered: Vec<&str> = self
            .mcp
            .tools
            .iter()
            .filter(|t| t.server == stand_in.server && !t.connect_only)
            .map(|t| t.name.as_str())
            .collect();
        if offered.is_empty() && self.mcp.to_connect.contains(&stand_in.server) {
            format!(
                "{provider} is connected. The tools of \"{name}\" are offered from the user's \
                 next message."
            )
        } else {
            format!(
                "{provider} is connected. The tools of \"{name}\" are available now: {}.",
                offered.join(", ")
            )
        }
    }
}

/// `timeout`, never past the turn's deadline.
fn turn_bounded(http: &Http, timeout: Duration) -> Duration {
    http.time_left().map_or(timeout, |left| left.min(timeout))
}
