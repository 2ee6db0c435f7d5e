//! Which endpoint a request path names, under the configured base path.
//!
//! Paths are matched exactly below `config.base_path` (`RUNWAY_BASE_PATH`): `{base}/runs`,
//! `{base}/health`, `{base}/lowkey/turn`, `{base}/agui[/{agentId}]`, `{base}/usage`,
//! `{base}/connections`, `{base}/connect/{id}`, `{base}/callback`, `{base}/oauth-client.json` and
//! `{base}/files/{token}/{name}`. Nothing is matched
//! by substring or suffix, so a base path may itself contain `files` or `runs`, and
//! `/x/runs` is not `/runs`.

use crate::protocol::lowkey::LOWKEY_TURN_PATH;

/// An endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// `POST {base}/runs`.
    Runs,
    /// `GET {base}/health`.
    Health,
    /// `POST {base}/lowkey/turn`.
    LowkeyTurn,
    /// `GET {base}/usage`.
    Usage,
    /// `GET` and `DELETE {base}/connections`: the vault's connected accounts, and their
    /// revocation.
    Connections,
    /// `POST {base}/agui` (the deployment's one agent) or `POST {base}/agui/{agentId}` (a
    /// worker of a workers file): an AG-UI 1.0 run.
    Agui {
        /// The worker the path names, if it names one.
        agent_id: Option<&'a str>,
    },
    /// `GET {base}/connect/{id}`: the `authorization` card's link.
    Connect {
        /// The connect state's id.
        id: &'a str,
    },
    /// `GET {base}/callback`: the OAuth provider's redirect back.
    Callback,
    /// `GET {base}/oauth-client.json`: the deployment's OAuth Client ID Metadata Document
    /// (MCP servers with `auth = "oauth"`; matched only with features `mcp-authorization` and
    /// `connect`).
    #[cfg_attr(
        not(all(feature = "mcp-authorization", feature = "connect")),
        allow(dead_code)
    )]
    ClientDocument,
    /// `GET {base}/files/{token}/{name}`: both segments present, nothing after them.
    File {
        /// The link's token.
        token: &'a str,
        /// The file name in the link.
        name: &'a str,
    },
}

/// The route `path` names below `base_path` (`""` or `/a/b`, no trailing slash), if any.
pub(crate) fn route<'a>(path: &'a str, base_path: &str) -> Option<Route<'a>> {
    let rest = path.strip_prefix(base_path)?;
    if !rest.starts_with('/') {
        return None;
    }
    match rest {
        "/runs" => return Some(Route::Runs),
        "/health" => return Some(Route::Health),
        "/usage" => return Some(Route::Usage),
        "/connections" => return Some(Route::Connections),
        "/callback" => return Some(Route::Callback),
        // Served by the connect routes: without `connect` no MCP server's authorization runs.
        #[cfg(all(feature = "mcp-authorization", feature = "connect"))]
        "/oauth-client.json" => return Some(Route::ClientDocument),
        "/agui" => return Some(Route::Agui { agent_id: None }),
        r if r == LOWKEY_TURN_PATH => return Some(Route::LowkeyTurn),
        _ => {}
    }
    if let Some(id) = rest.strip_prefix("/agui/") {
        return (!id.is_empty() && !id.contains('/')).then_some(Route::Agui { agent_id: Some(id) });
    }
    if let Some(id) = rest.strip_prefix("/connect/") {
        return (!id.is_empty() && !id.contains('/')).then_some(Route::Connect { id });
    }
    let file = rest.strip_prefix("/files/")?;
    let (token, name) = file.split_once('/')?;
    if token.is_empty() || name.is_empty() || name.contains('/') {
        return None;
    }
    Some(Route::File { token, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_at_the_root() {
        assert_eq!(route("/runs", ""), Some(Route::Runs));
        assert_eq!(route("/health", ""), Some(Route::Health));
        assert_eq!(route("/lowkey/turn", ""), Some(Route::LowkeyTurn));
        assert_eq!(route("/callback", ""), Some(Route::Callback));
        #[cfg(all(feature = "mcp-authorization", feature = "connect"))]
        assert_eq!(route("/oauth-client.json", ""), Some(Route::ClientDocument));
        assert_eq!(route("/connections", ""), Some(Route::Connections));
        assert_eq!(route("/connections/x", ""), None);
        assert_eq!(route("/agui", ""), Some(Route::Agui { agent_id: None }));
        assert_eq!(
            route("/agui/w-1", ""),
            Some(Route::Agui {
                agent_id: Some("w-1")
            })
        );
        assert_eq!(route("/agui/", ""), None);
        assert_eq!(route("/agui/a/b", ""), None);
        assert_eq!(
            route("/connect/abc", ""),
            Some(Route::Connect { id: "abc" })
        );
        assert_eq!(route("/connect/", ""), None);
        assert_eq!(route("/connect/a/b", ""), None);
        assert_eq!(route("/x/callback", ""), None);
        assert_eq!(
            route("/files/abc/report.csv", ""),
            Some(Route::File {
                token: "abc",
                name: "report.csv"
            })
        );
    }

    #[test]
    fn no_suffix_or_substring_matches() {
        for p in [
            "/x/runs",
            "/runs/",
            "/xruns",
            "/health/x",
            "/a/health",
            "/a/files/t/n",
            "/files/t",
            "/files/t/",
            "/files//n",
            "/files/t/n/more",
            "/a/lowkey/turn",
            "/x/agui",
            "/agui/",
            "",
            "/",
        ] {
            assert_eq!(route(p, ""), None, "{p}");
        }
    }

    #[test]
    fn routes_under_a_base_path_even_one_named_files() {
        let base = "/files/agent";
        assert_eq!(route("/files/agent/runs", base), Some(Route::Runs));
        assert_eq!(route("/files/agent/health", base), Some(Route::Health));
        assert_eq!(
            route("/files/agent/files/tok/a.csv", base),
            Some(Route::File {
                token: "tok",
                name: "a.csv"
            })
        );
        assert_eq!(route("/runs", base), None);
        assert_eq!(route("/files/agentx/runs", base), None);
        assert_eq!(route("/files/agent", base), None);
        assert_eq!(route("/files/agent/x/runs", base), None);
    }
}
