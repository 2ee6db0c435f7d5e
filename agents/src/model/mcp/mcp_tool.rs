//! [`McpTool`]: an MCP server's tool as the model sees it (its name prefixed with the
//! server's), and [`McpServers`]: the servers of one agent instance, listed for a turn and
//! called by it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::JsonObject;
use runway_core::connect::provider::Providers;
use runway_core::http_client::Http;
use runway_core::{AccessToken, Connection, Rejected, Turn};
use serde_json::Value;

use super::call_result::model_text;
use super::connection::{ListedTools, McpConnection, ending_alongside};
use super::person_sessions::{Person, PersonSessions};
use super::server_config::McpServer;
use crate::model::redaction::Redactor;
use crate::model::tool_runner::TokenRefused;
use crate::model::transcript::truncate;

/// Longest tool description sent to the model.
const MAX_DESCRIPTION_BYTES: usize = 1024;
/// Largest input schema sent to the model, as JSON.
const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// Longest tool name the model can be given (chat completions' limit).
const MAX_NAME_LEN: usize = 64;
/// Longest account of an MCP error (in a log line, a note, a tool result), cut after
/// redaction.
const MAX_ERROR_TEXT_BYTES: usize = 400;

/// A tool of an MCP server, offered to the model in this turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct McpTool {
    /// What the model calls: `{server}_{tool}`, with characters outside `A-Z a-z 0-9 _ -`
    /// replaced by `_`.
    pub name: String,
    /// Which server (index into the configured servers).
    pub server: usize,
    /// The server's own name for it.
    pub remote: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: Value,
    /// Ask the user before running it.
    pub approval: bool,
    /// The provider the server acts as the user with (`auth = "KEY"`).
    pub auth: Option<String>,
    /// The stand-in of a server with `auth` whose user has no connection
    /// ([`connect_tool`]): not the server's, never sent to it.
    pub connect_only: bool,
}

/// The MCP tools a turn may use, and what to tell the model about servers that are not
/// there.
#[derive(Debug, Default)]
pub(crate) struct McpCatalog {
    /// Every usable tool, in the servers' order.
    pub tools: Vec<McpTool>,
    /// One line per server whose tools are missing from this turn, and why.
    pub notes: Vec<String>,
    /// The servers with `auth` offered as their stand-in, since the user has no connection.
    pub to_connect: Vec<usize>,
    /// The stand-in of every server with `auth`, offered or not: a call of it left pending
    /// behind the card runs on the turn that answers it, when the server's own tools are
    /// offered instead.
    pub stand_ins: Vec<McpTool>,
}

/// What an agent instance keeps about one server between turns: one connection shared by
/// every turn, or, for a server with `auth`, one per person.
#[derive(Debug)]
enum Kept {
    Shared(Arc<McpConnection>),
    PerPerson(Box<PersonSessions>),
}

impl Kept {
    fn server(&self) -> &McpServer {
        match self {
            Self::Shared(c) => c.server(),
            Self::PerPerson(p) => p.server(),
        }
    }
}

/// What listing one server's tools for a turn came to.
enum Listing {
    Tools(Arc<ListedTools>),
    /// A server with `auth` whose user has no usable connection (or no user at all).
    Connect,
    /// What went wrong (not yet redacted).
    Failed(String),
}

/// The configured MCP servers, with what this agent instance keeps about each between turns.
#[derive(Debug, Default)]
pub(crate) struct McpServers {
    kept: Vec<Kept>,
}

impl McpServers {
    pub(crate) fn new(servers: &[McpServer]) -> Self {
        #[cfg(not(feature = "mcp"))]
        if !servers.is_empty() {
            // `parse_tools` refuses `[[mcp]]` in such a build: settings made in code are
            // refused the same way, loudly, never served without their tools.
            tracing::error!(
                "MCP servers configured, but this build has no MCP client (runway-agents' `mcp` feature); they are not used"
            );
            return Self::default();
        }
        let kept = servers
            .iter()
            .cloned()
            .map(|s| match s.auth {
                None => Kept::Shared(Arc::new(McpConnection::new(s))),
                Some(_) => Kept::PerPerson(Box::new(PersonSessions::new(s))),
            })
            .collect();
        Self { kept }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// True if a server acts as the user (`auth`): only then is a turn's person looked at.
    pub(crate) fn acts_as_users(&self) -> bool {
        self.kept.iter().any(|k| matches!(k, Kept::PerPerson(_)))
    }

    /// The connection a request to server `index` goes through: the shared one, or, for a
    /// server with `auth`, `person`'s (`None` without a person), with the connection of
    /// another person it pushed out, if any (its session is to be ended:
    /// [`ending_alongside`]).
    fn connection(
        &self,
        index: usize,
        person: Option<&Person>,
    ) -> Option<(Arc<McpConnection>, Option<Arc<McpConnection>>)> {
        match self.kept.get(index)? {
            Kept::Shared(c) => Some((c.clone(), None)),
            Kept::PerPerson(p) => person.map(|person| p.of(person)),
        }
    }

    /// Lists every server's tools (all at once; a kept list while it is fresh). A server that
    /// cannot be reached is left out with a note, never failing the turn; what it said is
    /// redacted by `redactor` before it is logged or noted. `taken` are the names already in
    /// use (the HTTP tools).
    ///
    /// A server with `auth` is listed as `turn`'s user, in their own session, with their token
    /// (a 401 renews it once, as a call's would); a user without a usable connection (or a
    /// turn without a user) is offered the server's stand-in tool `{server}_connect_account`
    /// instead: calling it ends the turn with the `authorization` card, the call pending.
    ///
    /// Built without the `mcp` feature there is no server to list (`parse_tools` refuses
    /// one), and none of the client is compiled in.
    #[cfg(not(feature = "mcp"))]
    #[allow(clippy::too_many_arguments, clippy::unused_async)]
    pub(crate) async fn catalog(
        &self,
        _turn: &Turn,
        _http: &Http,
        _now_ms: u64,
        _default_timeout: Duration,
        _taken: &[&str],
        _redactor: &Redactor,
        _providers: &Providers,
    ) -> McpCatalog {
        McpCatalog::default()
    }

    /// Lists every server's tools: the `catalog` above, as built with the `mcp` feature.
    #[cfg(feature = "mcp")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn catalog(
        &self,
        turn: &Turn,
        http: &Http,
        now_ms: u64,
        default_timeout: Duration,
        taken: &[&str],
        redactor: &Redactor,
        providers: &Providers,
    ) -> McpCatalog {
        let person = self.acts_as_users().then(|| person_of(turn)).flatten();
        let listed = futures::future::join_all(self.kept.iter().enumerate().map(|(i, kept)| {
            let timeout = call_timeout(http, kept.server(), default_timeout);
            self.listing(i, turn, person.as_ref(), http, redactor, now_ms, timeout)
        }))
        .await;
        let mut catalog = McpCatalog::default();
        let mut names: Vec<String> = taken.iter().map(|n| (*n).to_owned()).collect();
        for (index, (kept, listed)) in self.kept.iter().zip(listed).enumerate() {
            let server = kept.server();
            if server.auth.is_some() {
                catalog
                    .stand_ins
                    .push(connect_tool(server, index, providers));
            }
            let listed = match listed {
                Listing::Tools(l) => l,
                Listing::Connect => {
                    let tool = connect_tool(server, index, providers);
                    names.push(tool.name.clone());
                    catalog.tools.push(tool);
                    catalog.to_connect.push(index);
                    continue;
                }
                Listing::Failed(e) => {
                    let e = redactor.redact_and_cut(&e, MAX_ERROR_TEXT_BYTES);
                    tracing::warn!(server = %server.name, error = %e, "MCP server unavailable");
                    catalog.notes.push(format!(
                        "The tools of the MCP server \"{}\" are unavailable in this turn ({e}). \
                         If the user needs them, say so and suggest trying again later.",
                        server.name
                    ));
                    continue;
                }
            };
            let remote_names: Vec<String> = listed
                .tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect();
            let offers: Vec<McpTool> = listed
                .tools
                .iter()
                .filter_map(|raw| offered(server, index, raw, &remote_names, &names))
                .collect();
            for tool in unambiguous(offers) {
                names.push(tool.name.clone());
                catalog.tools.push(tool);
            }
        }
        catalog
    }

    /// Server `index`'s tools for this turn: as [`McpConnection::tools`], as the user for a
    /// server with `auth`.
    #[allow(clippy::too_many_arguments)]
    async fn listing(
        &self,
        index: usize,
        turn: &Turn,
        person: Option<&Person>,
        http: &Http,
        redactor: &Redactor,
        now_ms: u64,
        timeout: Duration,
    ) -> Listing {
        let Some(kept) = self.kept.get(index) else {
            return Listing::Failed("no such server".into());
        };
        let key = match kept {
            Kept::Shared(c) => {
                return match c.tools(http, None, redactor, now_ms, timeout).await {
                    Ok(l) => Listing::Tools(l),
                    Err(e) => Listing::Failed(e.to_string()),
                };
            }
            // Built for servers with `auth` only.
            Kept::PerPerson(p) => p.server().auth.as_deref().unwrap_or_default(),
        };
        // A lookup without a card: a user who is not connected costs one vault read, and
        // nothing is written until the model calls the stand-in.
        let (Some(person), Ok(Some(mut token))) = (person, turn.token(key).await) else {
            // No user, or no connection: the stand-in; a lookup that failed otherwise is
            // looked up again (and reported) when the stand-in is called.
            return Listing::Connect;
        };
        let Some((c, forgotten)) = self.connection(index, Some(person)) else {
            return Listing::Connect;
        };
        let listed = async {
            let mut retry = Rejected::Refresh;
            for _ in 0..MAX_SENDS_AS_USER {
                // A server echoing the user's token in its list does not get it to the model.
                let redactor = redactor.with(token.expose());
                match c
                    .tools(http, Some(&token), &redactor, now_ms, timeout)
                    .await
                {
                    Ok(l) => return Listing::Tools(l),
                    Err(e) if e.unauthorized() => {
                        match turn.connection_rejected(key, &token, retry).await {
                            Ok(Connection::Token(renewed)) => {
                                token = renewed;
                                retry = Rejected::GiveUp;
                            }
                            Ok(Connection::Authorize(_)) => return Listing::Connect,
                            Err(e) => return Listing::Failed(e.to_string()),
                        }
                    }
                    Err(e) => {
                        return Listing::Failed(
                            e.to_string().replace(token.expose(), "[redacted]"),
                        );
                    }
                }
            }
            Listing::Failed("the server refused the user's token again".into())
        };
        ending_alongside(http, forgotten, listed).await
    }

    /// Runs `tool` with the model's `arguments` (JSON text) and returns what the model reads:
    /// the result, or what went wrong, redacted by `redactor`, then cut to `max_bytes`. A tool
    /// of a server with `auth` goes as `person`, with their token `bearer`.
    ///
    /// # Errors
    /// [`TokenRefused`]: sent with `bearer`, the request was answered 401.
    /// Built without the `mcp` feature no server is configured (no tool of one is offered),
    /// and no client is compiled in.
    #[cfg(not(feature = "mcp"))]
    #[allow(clippy::too_many_arguments, clippy::unused_async)]
    pub(crate) async fn call(
        &self,
        _http: &Http,
        tool: &McpTool,
        _arguments: &str,
        _bearer: Option<&AccessToken>,
        _person: Option<&Person>,
        _default_timeout: Duration,
        _max_bytes: usize,
        _redactor: &Redactor,
    ) -> Result<String, TokenRefused> {
        Ok(format!("Error: there is no tool named {:?}.", tool.name))
    }

    /// Runs `tool`: the `call` above, as built with the `mcp` feature.
    #[cfg(feature = "mcp")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call(
        &self,
        http: &Http,
        tool: &McpTool,
        arguments: &str,
        bearer: Option<&AccessToken>,
        person: Option<&Person>,
        default_timeout: Duration,
        max_bytes: usize,
        redactor: &Redactor,
    ) -> Result<String, TokenRefused> {
        let reachable = match self.kept.get(tool.server) {
            Some(Kept::Shared(_)) => true,
            Some(Kept::PerPerson(_)) => person.is_some(),
            None => false,
        };
        if !reachable {
            return Ok(format!("Error: there is no tool named {:?}.", tool.name));
        }
        if tool.auth.is_some() && bearer.is_none() {
            // Never sent without the user's token (`run_calls` looks it up first).
            return Ok(
                "Error: this tool acts as the user, and no account is connected; the \
                       tool was not called."
                    .into(),
            );
        }
        let args: JsonObject = if arguments.trim().is_empty() {
            JsonObject::new()
        } else {
            match serde_json::from_str(arguments) {
                Ok(Value::Object(o)) => o,
                Ok(_) => return Ok("Error: the arguments must be a JSON object.".into()),
                Err(e) => return Ok(format!("Error: the arguments are not valid JSON ({e}).")),
            }
        };
        // Looked up last: a person's connection pushing another out is always followed by a
        // request, alongside which the other's session is ended.
        let Some((connection, forgotten)) = self.connection(tool.server, person) else {
            return Ok(format!("Error: there is no tool named {:?}.", tool.name));
        };
        let timeout = call_timeout(http, connection.server(), default_timeout);
        let called = connection.call(http, bearer, &tool.remote, args, timeout);
        let text = match ending_alongside(http, forgotten, called).await {
            Ok(result) => {
                tracing::info!(
                    tool = %tool.name,
                    is_error = result.is_error == Some(true),
                    "MCP tool called"
                );
                model_text(&result)
            }
            Err(e) if bearer.is_some() && e.unauthorized() => {
                tracing::info!(tool = %tool.name, "the MCP server refused the user's token");
                return Err(TokenRefused);
            }
            Err(e) if e.timed_out() => {
                let e = redactor.redact_and_cut(&e.to_string(), MAX_ERROR_TEXT_BYTES);
                tracing::warn!(tool = %tool.name, error = %e, "MCP tool timed out");
                format!(
                    "Error: the tool did not answer within {} s and was cancelled.",
                    timeout.as_secs_f64().ceil()
                )
            }
            Err(e) => {
                let e = e.to_string();
                let e = match bearer {
                    Some(t) => e.replace(t.expose(), "[redacted]"),
                    None => e,
                };
                let e = redactor.redact_and_cut(&e, MAX_ERROR_TEXT_BYTES);
                tracing::warn!(tool = %tool.name, error = %e, "MCP tool call failed");
                format!("Error: the tool could not be called ({e}).")
            }
        };
        Ok(redactor.redact_and_cut(&text, max_bytes))
    }
}

/// The most times one listing is sent with the user's token: the first, once with a refreshed
/// token, and once with a newer token another turn stored meanwhile.
const MAX_SENDS_AS_USER: usize = 3;

/// Whom `turn`'s requests to servers with `auth` go as (none without a `userId`).
pub(crate) fn person_of(turn: &Turn) -> Option<Person> {
    turn.user_id.as_ref().map(|user| Person {
        workspace: turn.workspace_id.clone(),
        user: user.clone(),
    })
}

/// The model's name for the stand-in of server `name` (see [`connect_tool`]).
pub(crate) fn connect_tool_name(server: &str) -> String {
    format!("{server}_{CONNECT_TOOL}")
}

/// The stand-in's own part of its name.
const CONNECT_TOOL: &str = "connect_account";

/// The stand-in offered for a server with `auth` whose tools cannot be listed for the user
/// (no connection yet): the model calls it when the user wants something the server does,
/// and the call waits behind the `authorization` card like any call that needs the account.
fn connect_tool(server: &McpServer, index: usize, providers: &Providers) -> McpTool {
    let key = server.auth.clone().unwrap_or_default();
    let provider = providers
        .get(&key)
        .map_or(key.as_str(), |p| p.name.as_str());
    McpTool {
        name: connect_tool_name(&server.name),
        server: index,
        remote: String::new(),
        description: format!(
            "Connects the user's {provider} account, which the tools of \"{}\" need: call it \
             when the user asks for something those tools would do. The user is asked to sign \
             in; the tools are offered once they have.",
            server.name
        ),
        parameters: serde_json::json!({"type": "object", "properties": {}}),
        approval: false,
        auth: server.auth.clone(),
        connect_only: true,
    }
}

/// The server's timeout (or the agent's), never past the turn's deadline.
fn call_timeout(http: &Http, server: &McpServer, default: Duration) -> Duration {
    let wanted = server.timeout.unwrap_or(default);
    http.time_left().map_or(wanted, |left| left.min(wanted))
}

/// True if `server` may offer the model a tool named `name` (by the name the model sees,
/// `{server}_{tool}`): it has the server's prefix and, if the server has a `tools` list, is
/// one of those. Used at start-up, before the server is contacted, to check a workspace's
/// `tools_allowed`.
pub(crate) fn may_offer(server: &McpServer, name: &str) -> bool {
    let Some(tool) = name
        .strip_prefix(server.name.as_str())
        .and_then(|rest| rest.strip_prefix('_'))
    else {
        return false;
    };
    !tool.is_empty()
        && name.len() <= MAX_NAME_LEN
        && server.allow.as_ref().is_none_or(|allowed| {
            allowed
                .iter()
                .any(|remote| model_name(&server.name, remote) == name)
        })
}

/// `raw` (one entry of the server's list) as a tool for the model, unless it is not allowed,
/// needs what this client does not do, or its name cannot be given to the model.
fn offered(
    server: &McpServer,
    index: usize,
    raw: &JsonObject,
    remote_names: &[String],
    taken: &[String],
) -> Option<McpTool> {
    let remote = raw.get("name")?.as_str()?;
    if !server.allows(remote) {
        return None;
    }
    let skip = |why: &str| {
        tracing::debug!(server = %server.name, tool = remote, "MCP tool not offered: {why}");
        None
    };
    // Tasks (SEP-1686) are not implemented: a tool that must run as a task cannot be called.
    let task_support = raw
        .get("execution")
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str);
    if task_support == Some("required") {
        return skip("it can only run as a task");
    }
    let name = model_name(&server.name, remote);
    if name.len() > MAX_NAME_LEN {
        return skip("its prefixed name is longer than 64 characters");
    }
    if taken.contains(&name) {
        return skip("its prefixed name is already taken");
    }
    if server.auth.is_some() && name == connect_tool_name(&server.name) {
        return skip("its prefixed name is the stand-in's, offered before the user connects");
    }
    let parameters = match raw.get("inputSchema") {
        Some(Value::Object(schema)) => Value::Object(schema.clone()),
        _ => return skip("it has no input schema object"),
    };
    if parameters.to_string().len() > MAX_SCHEMA_BYTES {
        return skip("its input schema is larger than 16 KiB");
    }
    let description = raw
        .get("description")
        .or_else(|| raw.get("title"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(McpTool {
        name,
        server: index,
        remote: remote.to_owned(),
        description: truncate(description, MAX_DESCRIPTION_BYTES),
        parameters,
        approval: server.needs_approval(remote, remote_names),
        auth: server.auth.clone(),
        connect_only: false,
    })
}

/// `offers` less every tool whose model name another one has too: two tools whose names differ
/// only in characters the model cannot be given (`a.b`, `a_b`) are both left out, since which
/// one a call (or an approval) meant would depend on the order of the server's list.
fn unambiguous(offers: Vec<McpTool>) -> Vec<McpTool> {
    let names: Vec<String> = offers.iter().map(|t| t.name.clone()).collect();
    offers
        .into_iter()
        .filter(|tool| {
            let unique = names.iter().filter(|n| **n == tool.name).count() == 1;
            if !unique {
                tracing::debug!(tool = %tool.remote, "MCP tool not offered: its name is ambiguous");
            }
            unique
        })
        .collect()
}

/// `{prefix}_{tool}`, with what chat-completions names do not allow replaced by `_`.
fn model_name(prefix: &str, remote: &str) -> String {
    let tool: String = remote
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}_{tool}")
}

#[cfg(test)]
mod tests {
    use super::super::server_config::McpApproval;
    use super::*;
    use serde_json::json;

    fn server() -> McpServer {
        McpServer {
            name: "every".into(),
            url: "http://127.0.0.1:1/mcp".parse().unwrap(),
            headers: Vec::new(),
            allow: None,
            approval: McpApproval::Only(vec!["get-sum".into()]),
            timeout: None,
            auth: None,
        }
    }

    fn raw(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn tools_are_prefixed_filtered_and_gated() {
        let s = server();
        let names = vec!["get-sum".to_owned(), "echo".to_owned()];
        let schema = json!({"type": "object", "properties": {}});
        let t = offered(
            &s,
            0,
            &raw(json!({"name": "get-sum", "description": "Adds", "inputSchema": schema})),
            &names,
            &[],
        )
        .unwrap();
        assert_eq!(t.name, "every_get-sum");
        assert!(t.approval);
        let t = offered(
            &s,
            0,
            &raw(json!({"name": "files.read v2", "inputSchema": schema})),
            &names,
            &[],
        )
        .unwrap();
        assert_eq!(t.name, "every_files_read_v2");
        assert!(!t.approval);
        let task_only = raw(json!({"name": "research", "inputSchema": schema,
                                   "execution": {"taskSupport": "required"}}));
        assert_eq!(offered(&s, 0, &task_only, &names, &[]), None);
        let echo = raw(json!({"name": "echo", "inputSchema": schema}));
        assert_eq!(offered(&s, 0, &echo, &names, &["every_echo".into()]), None);
        let long = raw(json!({"name": "x".repeat(60), "inputSchema": schema}));
        assert_eq!(offered(&s, 0, &long, &names, &[]), None);
        let allow = McpServer {
            allow: Some(vec!["get-sum".into()]),
            ..server()
        };
        assert_eq!(offered(&allow, 0, &echo, &names, &[]), None);
    }

    #[test]
    fn allowed_names_are_checked_against_the_prefix_and_the_servers_list() {
        let open = server();
        assert!(may_offer(&open, "every_echo"));
        assert!(!may_offer(&open, "every_"));
        assert!(!may_offer(&open, "everything_echo"));
        assert!(!may_offer(&open, "get_weather"));
        let listed = McpServer {
            allow: Some(vec!["get-sum".into(), "files.read".into()]),
            ..server()
        };
        assert!(may_offer(&listed, "every_get-sum"));
        assert!(may_offer(&listed, "every_files_read"));
        assert!(!may_offer(&listed, "every_echo"));
    }

    #[test]
    fn tools_whose_names_collide_after_replacement_are_all_left_out() {
        let s = server();
        let schema = json!({"type": "object"});
        let offers: Vec<McpTool> = ["a.b", "a_b", "c"]
            .iter()
            .filter_map(|n| {
                let t = raw(json!({"name": n, "inputSchema": schema}));
                offered(&s, 0, &t, &[], &[])
            })
            .collect();
        assert_eq!(offers.len(), 3);
        let kept: Vec<String> = unambiguous(offers).into_iter().map(|t| t.remote).collect();
        assert_eq!(kept, ["c"]);
    }
}
