//! The tools file (`RUNWAY_TOOLS_FILE` / `RUNWAY_TOOLS`): HTTP tools (`[[tools]]`) and MCP
//! servers (`[[mcp]]`) the model may call, checked at start-up so a mistake is refused with its
//! line and the reason.

mod raw;

use std::time::Duration;

use serde_json::Value;
use toml::Spanned;

use super::mcp::{McpApproval, McpServer};
use super::secret::Secret;
use crate::toml_settings::{self, Item};
use raw::{RawApproval, RawMcp, RawProvider};
use runway_core::connect::provider::{
    Endpoints, Provider, ProviderEndpoints, Providers, mcp_provider_key, provider_url,
};

/// Longest `timeout` of an `[[mcp]]` entry, in seconds.
const MAX_MCP_TIMEOUT_SECS: f64 = 900.0;

/// What a tools file declares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolsFile {
    /// `[[tools]]`: HTTP endpoints.
    pub tools: Vec<HttpTool>,
    /// `[[mcp]]`: MCP servers, whose tools are listed when a turn needs them.
    pub mcp: Vec<McpServer>,
    /// `[providers.KEY]`: OAuth providers users connect their accounts at, for tools with
    /// `auth = "KEY"`.
    pub providers: Providers,
}

/// An HTTP endpoint the model may call as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpTool {
    /// What the model calls (`^[A-Za-z0-9_-]{1,64}$`, unique).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// `GET`, `DELETE` (arguments fill the URL's `{arg}` placeholders, URL-encoded), or
    /// `POST`, `PUT`, `PATCH` (placeholders are filled too, and the arguments are the JSON body).
    pub method: http::Method,
    /// The URL, with `{arg}` placeholders.
    pub url: String,
    /// Request headers; values had their `${NAME}` references filled from the settings.
    pub headers: Vec<(http::HeaderName, Secret)>,
    /// Ask the user before running it (a `review` interrupt).
    pub approval: bool,
    /// Which redirects of the tool's API are followed (default: same origin only).
    pub redirects: Redirects,
    /// `auth = "KEY"`: the call is sent as the user, with their token at provider `KEY`
    /// (`Authorization: Bearer …`, to the tool's own origin only).
    pub auth: Option<String>,
}

/// Which redirects a tool's requests follow (`redirects` in the tools file). Whatever the
/// policy, the tool's configured headers go to the tool's own origin only: a redirect to
/// another origin, where followed, is sent without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redirects {
    /// `"none"`: a redirect is the tool's answer (its status and `Location` are reported).
    None,
    /// `"same-origin"` (the default): followed while they stay on the URL's scheme, host and
    /// port; one to another origin is not followed.
    #[default]
    SameOrigin,
    /// `"any"`: followed anywhere (up to 5), without the configured headers once off the
    /// tool's origin.
    Any,
}

/// A tools file that cannot be used: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}, line {line}, column {column}: {reason}")]
pub struct ToolsFileError {
    /// `RUNWAY_TOOLS` or the file's path.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parses and checks a tools file. `origin` names it in errors; `setting` reads `${NAME}`
/// references in header values (a reference to a setting that is not set is an error: a tool
/// must not silently run without its credentials).
///
/// An MCP server's `name` is the prefix of its tools' names (`{name}_{tool}`), so an HTTP
/// tool named `{name}_…` or two servers with one name are refused here, before any server is
/// asked for its tools.
///
/// # Errors
/// The first problem, with its line and column.
pub fn parse_tools(
    source: &str,
    origin: &str,
    setting: &dyn Fn(&str) -> Option<String>,
) -> Result<ToolsFile, ToolsFileError> {
    let err_at = |offset: usize, reason: String| {
        let (line, column) = line_column(source, offset);
        ToolsFileError {
            origin: origin.to_owned(),
            line,
            column,
            reason,
        }
    };
    let de_err = |e: toml_settings::Error| {
        let offset = e.span().map_or(0, |s| s.start);
        err_at(offset, e.message().trim().to_owned())
    };
    let raw = toml_settings::parse(source)
        .and_then(raw::read_file)
        .map_err(de_err)?;
    let mut tools = Vec::new();
    for t in raw.tools {
        let name = t.name.get_ref().trim().to_owned();
        if name.is_empty()
            || name.len() > 64
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(err_at(
                t.name.span().start,
                "a tool name must be 1-64 characters of A-Z a-z 0-9 _ -".into(),
            ));
        }
        if tools.iter().any(|x: &HttpTool| x.name == name) {
            return Err(err_at(
                t.name.span().start,
                format!("a second tool named {name:?}"),
            ));
        }
        let method = match t.method.get_ref().trim().to_ascii_uppercase().as_str() {
            "GET" => http::Method::GET,
            "DELETE" => http::Method::DELETE,
            "POST" => http::Method::POST,
            "PUT" => http::Method::PUT,
            "PATCH" => http::Method::PATCH,
            _ => {
                return Err(err_at(
                    t.method.span().start,
                    "method must be GET, POST, PUT, PATCH or DELETE".into(),
                ));
            }
        };
        let parameters = match t.parameters {
            None => serde_json::json!({"type": "object", "properties": {}}),
            Some(p) => {
                let span = p.span();
                let v = p.into_inner();
                if !v.is_object() {
                    return Err(err_at(
                        span.start,
                        "parameters must be a JSON Schema object".into(),
                    ));
                }
                v
            }
        };
        let url = t.url.get_ref().trim().to_owned();
        let placeholders = match placeholders(&url) {
            Ok(p) => p,
            Err(reason) => return Err(err_at(t.url.span().start, reason)),
        };
        let declared = parameters.get("properties").and_then(Value::as_object);
        for p in &placeholders {
            if !declared.is_some_and(|d| d.contains_key(p)) {
                return Err(err_at(
                    t.url.span().start,
                    format!("the url's {{{p}}} is not one of the tool's parameters"),
                ));
            }
        }
        let probe = fill_placeholders(&url, &|_| Some("x".into()));
        match probe.as_deref().map(url::Url::parse) {
            Ok(Ok(u)) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => {
                return Err(err_at(
                    t.url.span().start,
                    "url must be an absolute http or https URL".into(),
                ));
            }
        }
        let tool_headers = match &t.headers {
            Some(table) => {
                read_headers(table.get_ref(), setting).map_err(|r| err_at(table.span().start, r))?
            }
            None => Vec::new(),
        };
        let redirects = match t.redirects.as_ref().map(|r| r.get_ref().trim()) {
            None | Some("same-origin") => Redirects::SameOrigin,
            Some("none") => Redirects::None,
            Some("any") => Redirects::Any,
            Some(_) => {
                let at = t.redirects.as_ref().map_or(0, |r| r.span().start);
                return Err(err_at(
                    at,
                    "redirects must be \"same-origin\", \"none\" or \"any\"".into(),
                ));
            }
        };
        let auth = match t.auth {
            None => None,
            Some(a) => {
                let key = a.get_ref().trim();
                if !raw.providers.contains_key(key) {
                    return Err(err_at(
                        a.span().start,
                        format!("auth = {key:?} names no [providers.{key}]"),
                    ));
                }
                Some(key.to_owned())
            }
        };
        tools.push(HttpTool {
            name,
            description: t.description,
            parameters,
            method,
            url,
            headers: tool_headers,
            approval: t.approval,
            redirects,
            auth,
        });
    }
    let mut mcp = Vec::new();
    if let Some(m) = raw.mcp.first().filter(|_| !cfg!(feature = "mcp")) {
        return Err(err_at(
            m.name.span().start,
            "[[mcp]]: this build has no MCP client (runway-agents' `mcp` feature, on by \
             default, is off): remove the entry or build with the feature"
                .into(),
        ));
    }
    for m in raw.mcp {
        let server = parse_mcp(m, setting, &|key| raw.providers.contains_key(key))
            .map_err(|(at, r)| err_at(at, r))?;
        if let Some(e) = mcp_name_conflict(&server.0, &tools, &mcp) {
            return Err(err_at(server.1, e));
        }
        mcp.push(server.0);
    }
    let mut providers = Providers::new();
    for (key, p) in raw.providers {
        providers.add(parse_provider(&key, p, setting).map_err(|(at, r)| err_at(at, r))?);
    }
    // `auth = "oauth"`: the MCP server's own authorization, a provider of its own.
    for server in &mcp {
        if server.auth.as_deref() == Some(mcp_provider_key(&server.name).as_str()) {
            providers.add(Provider {
                key: mcp_provider_key(&server.name),
                name: server.name.clone(),
                endpoints: Endpoints::McpServer(server.url.clone()),
                client_id: String::new(),
                client_secret: None,
                scopes: Vec::new(),
                revocation_url: None,
            });
        }
    }
    Ok(ToolsFile {
        tools,
        mcp,
        providers,
    })
}

/// `auth = "oauth"` on an `[[mcp]]` entry: the MCP server's own authorization (discovered
/// from the server, no `[providers]` entry).
const MCP_OAUTH: &str = "oauth";

/// One `[providers.KEY]` table; or where and why it is refused.
fn parse_provider(
    key: &str,
    p: RawProvider,
    setting: &dyn Fn(&str) -> Option<String>,
) -> Result<Provider, (usize, String)> {
    let url = |u: &Spanned<String>, what: &str| {
        provider_url(u.get_ref()).map_err(|e| (u.span().start, format!("{what} {e}")))
    };
    if key == MCP_OAUTH || key.contains(':') {
        return Err((
            p.name.span().start,
            format!(
                "[providers.{key}]: a provider key must not be \"oauth\" (auth = \"oauth\" \
                 is an MCP server's own authorization) nor contain ':'"
            ),
        ));
    }
    let name = p.name.get_ref().trim().to_owned();
    if name.is_empty() {
        return Err((p.name.span().start, "a provider needs a name".into()));
    }
    let client_id = p.client_id.get_ref().trim().to_owned();
    if client_id.is_empty() {
        return Err((p.client_id.span().start, "client_id is empty".into()));
    }
    let client_secret = match &p.client_secret {
        None => None,
        Some(s) => Some(fill_settings(s.get_ref(), setting).map_err(|r| {
            (
                s.span().start,
                r.replace("the header needs", "client_secret needs"),
            )
        })?),
    };
    let endpoints = match (&p.issuer, &p.authorize_url, &p.token_url) {
        (Some(issuer), None, None) => Endpoints::Issuer(url(issuer, "issuer")?),
        (None, Some(authorize_url), Some(token_url)) => Endpoints::Given(ProviderEndpoints {
            authorize_url: url(authorize_url, "authorize_url")?,
            token_url: url(token_url, "token_url")?,
        }),
        (Some(issuer), _, _) => {
            return Err((
                issuer.span().start,
                "set issuer, or authorize_url and token_url, not both".into(),
            ));
        }
        _ => {
            return Err((
                p.name.span().start,
                "a provider needs issuer (its metadata names the endpoints), or both \
                 authorize_url and token_url"
                    .into(),
            ));
        }
    };
    let revocation_url = match &p.revocation_url {
        None => None,
        Some(u) => Some(url(u, "revocation_url")?),
    };
    Ok(Provider {
        key: key.to_owned(),
        name,
        endpoints,
        client_id,
        client_secret,
        scopes: p.scopes,
        revocation_url,
    })
}

/// Why `server`'s name cannot be used next to these tools and servers, if it cannot.
fn mcp_name_conflict(server: &McpServer, tools: &[HttpTool], mcp: &[McpServer]) -> Option<String> {
    let name = &server.name;
    if mcp.iter().any(|m| &m.name == name) {
        return Some(format!("a second MCP server named {name:?}"));
    }
    let prefix = format!("{name}_");
    tools.iter().find(|t| t.name.starts_with(&prefix)).map(|t| {
        format!(
            "the HTTP tool {:?} would collide with the tools of MCP server {name:?} \
             (named {prefix}…)",
            t.name
        )
    })
}

/// One `[[mcp]]` entry, and where its name is; or where and why it is refused.
fn parse_mcp(
    m: RawMcp,
    setting: &dyn Fn(&str) -> Option<String>,
    is_provider: &dyn Fn(&str) -> bool,
) -> Result<(McpServer, usize), (usize, String)> {
    let name_at = m.name.span().start;
    let name = m.name.get_ref().trim().to_owned();
    if name.is_empty()
        || name.len() > 32
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err((
            name_at,
            "an MCP server name must be 1-32 characters of A-Z a-z 0-9 - (it prefixes its \
             tools' names, followed by _)"
                .into(),
        ));
    }
    let url_at = m.url.span().start;
    let url = match url::Url::parse(m.url.get_ref().trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => u,
        _ => return Err((url_at, "url must be an absolute http or https URL".into())),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err((
            url_at,
            "url must not embed credentials (use headers with a ${NAME} setting)".into(),
        ));
    }
    let allow = match m.tools {
        None => None,
        Some(list) => {
            let at = list.span().start;
            let list = list.into_inner();
            if list.iter().any(|n| n.trim().is_empty()) {
                return Err((at, "tools must list tool names".into()));
            }
            Some(list)
        }
    };
    let approval = match m.approval {
        None | Some(RawApproval::All(false)) => McpApproval::Never,
        Some(RawApproval::All(true)) => McpApproval::Always,
        Some(RawApproval::Only(names)) => McpApproval::Only(names),
    };
    let timeout = match m.timeout {
        None => None,
        Some(t) => {
            let at = t.span().start;
            let secs = *t.get_ref();
            if !(secs > 0.0 && secs <= MAX_MCP_TIMEOUT_SECS) {
                return Err((
                    at,
                    format!(
                        "timeout must be a number of seconds, more than 0 and at most {MAX_MCP_TIMEOUT_SECS}"
                    ),
                ));
            }
            Some(Duration::from_secs_f64(secs))
        }
    };
    let headers = match &m.headers {
        Some(table) => {
            read_headers(table.get_ref(), setting).map_err(|r| (table.span().start, r))?
        }
        None => Vec::new(),
    };
    let auth = match m.auth {
        None => None,
        Some(a) if a.get_ref().trim() == MCP_OAUTH => {
            // The user's token goes to this URL: https, or http on a loopback address only.
            if provider_url(url.as_str()).is_err() {
                return Err((
                    url_at,
                    "with auth = \"oauth\" the url must be https (http only on a loopback \
                     address such as 127.0.0.1): the user's token is sent there"
                        .into(),
                ));
            }
            Some(mcp_provider_key(&name))
        }
        Some(a) => {
            let key = a.get_ref().trim();
            if !is_provider(key) {
                return Err((
                    a.span().start,
                    format!("auth = {key:?} names no [providers.{key}]"),
                ));
            }
            Some(key.to_owned())
        }
    };
    Ok((
        McpServer {
            name,
            url,
            headers,
            allow,
            approval,
            timeout,
            auth,
        },
        name_at,
    ))
}

/// A `headers` table: valid names, and string values whose `${NAME}` references are filled.
fn read_headers(
    table: &[(String, Item)],
    setting: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(http::HeaderName, Secret)>, String> {
    let mut out = Vec::new();
    for (k, v) in table {
        let Ok(name) = http::HeaderName::try_from(k.as_str()) else {
            return Err(format!("{k:?} is not a valid header name"));
        };
        let Some(v) = v.as_str() else {
            return Err(format!("header {k} must be a string"));
        };
        let value = fill_settings(v, setting)?;
        if http::HeaderValue::try_from(value.as_str()).is_err() {
            return Err(format!("header {k}'s value is not a valid header value"));
        }
        out.push((name, Secret::new(value)));
    }
    Ok(out)
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The `{name}` placeholders of a URL template.
pub(crate) fn placeholders(template: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| "an unclosed { in url".to_owned())?;
        let name = &after[..close];
        if name.is_empty() || name.contains('{') {
            return Err("an empty or nested {} in url".into());
        }
        out.push(name.to_owned());
        rest = &after[close + 1..];
    }
    Ok(out)
}

/// Fills `{name}` placeholders with `value(name)`, percent-encoded (everything but
/// `A-Z a-z 0-9 - . _ ~`: every RFC 3986 reserved character, `%` and `\\` included), so an
/// argument can never change the URL's structure. A value that would make a path segment
/// `.` or `..` is refused: URL parsers resolve such a segment (percent-encoded too: `%2E%2E`
/// is `..` to a WHATWG parser), which would move the request to another path.
pub(crate) fn fill_placeholders(
    template: &str,
    value: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let filled = fill_encoded(template, value)?;
    if dot_segments(&filled) > dot_segments(template) {
        return Err("an argument cannot be \".\" or \"..\" as a part of the URL's path".into());
    }
    Ok(filled)
}

/// How many segments of `url`'s path are `.` or `..` (or their percent-encoded forms).
fn dot_segments(url: &str) -> usize {
    let after_scheme = url.find("://").map_or(url, |i| &url[i + 3..]);
    let path_and_rest = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
    let path = path_and_rest.split(['?', '#']).next().unwrap_or_default();
    path.split('/')
        .filter(|seg| {
            let s = seg.to_ascii_lowercase().replace("%2e", ".");
            s == "." || s == ".."
        })
        .count()
}

fn fill_encoded(template: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| "an unclosed { in url".to_owned())?;
        let name = &after[..close];
        let v = value(name).ok_or_else(|| format!("the argument {name:?} is missing"))?;
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Fills `${NAME}` references from the settings; a reference to an unset setting is an error.
pub(crate) fn fill_settings(
    value: &str,
    setting: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find('}')
            .ok_or_else(|| "an unclosed ${ in a header value".to_owned())?;
        let name = &after[..close];
        let v = setting(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("the header needs the setting {name}, which is not set"))?;
        out.push_str(&v);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[tools]]
name = "get_weather"
description = "Current weather in a city"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
method = "GET"
url = "https://weather.example.com/now?city={city}"

[[tools]]
name = "issue_refund"
description = "Refund an order"
parameters = { type = "object", properties = { order = { type = "string" }, amount = { type = "number" } }, required = ["order", "amount"] }
method = "POST"
url = "https://shop.example.com/refunds"
headers = { Authorization = "Bearer ${SHOP_TOKEN}" }
approval = true
"#;

    /// Issue 26: a build without the `mcp` feature refuses `[[mcp]]` where it is written,
    /// naming the feature (never a server silently left without its tools). Runs in such a
    /// build: `cargo test -p runway-agents --no-default-features --features model --lib
    /// without_the_mcp_feature`.
    #[cfg(not(feature = "mcp"))]
    #[test]
    fn without_the_mcp_feature_an_mcp_server_is_refused_with_its_line() {
        let src = "[[tools]]\nname = \"t\"\nmethod = \"GET\"\nurl = \"https://a.example/x\"\n\n\
                   [[mcp]]\nname = \"crm\"\nurl = \"https://mcp.acme.example/mcp\"\n";
        let e = parse_tools(src, "tools.toml", &settings).expect_err("no MCP client");
        assert_eq!((e.line, e.column), (7, 8), "{e}");
        assert!(e.reason.contains("`mcp` feature"), "{e}");
        let http_only =
            "[[tools]]\nname = \"t\"\nmethod = \"GET\"\nurl = \"https://a.example/x\"\n";
        assert_eq!(
            parse_tools(http_only, "tools.toml", &settings)
                .unwrap()
                .tools
                .len(),
            1
        );
    }

    fn settings(name: &str) -> Option<String> {
        (name == "SHOP_TOKEN").then(|| "tok-123".to_owned())
    }

    const PROVIDERS: &str = r#"
[providers.acme]
name = "Acme CRM"
authorize_url = "https://acme.example/oauth/authorize"
token_url = "http://127.0.0.1:9/oauth/token"
client_id = "runway"
client_secret = "${SHOP_TOKEN}"
scopes = ["profile", "orders:read"]

[[tools]]
name = "my_orders"
method = "GET"
url = "https://api.acme.example/orders"
auth = "acme"
"#;

    #[test]
    fn providers_parse_and_tools_name_them() {
        let file = parse_tools(PROVIDERS, "t.toml", &settings).unwrap();
        let acme = file.providers.get("acme").unwrap();
        assert_eq!(acme.name, "Acme CRM");
        assert_eq!(acme.client_secret.as_deref(), Some("tok-123"));
        assert_eq!(acme.scopes, ["profile", "orders:read"]);
        assert!(!format!("{acme:?}").contains("tok-123"));
        assert_eq!(file.tools[0].auth.as_deref(), Some("acme"));
    }

    /// Issue 27: `[[mcp]] auth = "oauth"` needs no `[providers]` entry: the server's own
    /// authorization is a provider of its own, `mcp:NAME`, discovered from its URL, which must
    /// be https (or loopback http); a `[providers.oauth]` or a key with `:` is refused.
    #[cfg(feature = "mcp")]
    #[test]
    fn an_mcp_server_with_its_own_oauth_is_a_provider_of_its_own() {
        let src =
            "[[mcp]]\nname = \"orders\"\nurl = \"http://127.0.0.1:9/mcp\"\nauth = \"oauth\"\n";
        let file = parse_tools(src, "t.toml", &settings).unwrap();
        assert_eq!(file.mcp[0].auth.as_deref(), Some("mcp:orders"));
        let p = file.providers.get("mcp:orders").unwrap();
        assert_eq!(p.name, "orders");
        assert_eq!(
            p.endpoints,
            Endpoints::McpServer("http://127.0.0.1:9/mcp".parse().unwrap())
        );
        let plain_http = src.replace("127.0.0.1:9", "mcp.example");
        let e = parse_tools(&plain_http, "t.toml", &settings).unwrap_err();
        assert!(e.reason.contains("must be https"), "{e}");
        assert_eq!(e.line, 3);
        for (key, name) in [("oauth", "oauth"), ("\"a:b\"", "a:b")] {
            let clash = PROVIDERS
                .replace("[providers.acme]", &format!("[providers.{key}]"))
                .replace("auth = \"acme\"", &format!("auth = \"{name}\""));
            let e = parse_tools(&clash, "t.toml", &settings).unwrap_err();
            assert!(e.reason.contains("must not be \"oauth\""), "{e}");
        }
    }

    /// Issue 27: `[[mcp]] auth = "KEY"` names a provider; an unknown one refuses start-up with
    /// its line and column.
    #[cfg(feature = "mcp")]
    #[test]
    fn an_mcp_server_acts_as_the_user_of_a_declared_provider() {
        let src = format!(
            "{PROVIDERS}\n[[mcp]]\nname = \"crm\"\nurl = \"https://mcp.acme.example/mcp\"\nauth = \"acme\"\n"
        );
        let file = parse_tools(&src, "t.toml", &settings).unwrap();
        assert_eq!(file.mcp[0].auth.as_deref(), Some("acme"));
        let plain = WITH_MCP;
        let file = parse_tools(plain, "t.toml", &settings).unwrap();
        assert!(file.mcp.iter().all(|m| m.auth.is_none()));
        let at = src.rfind("auth = \"acme\"").unwrap();
        let unknown = format!("{}auth = \"globex\"\n", &src[..at]);
        let e = parse_tools(&unknown, "t.toml", &settings).unwrap_err();
        assert_eq!((e.line, e.column), (19, 8), "{e}");
        assert!(e.reason.contains("names no [providers.globex]"), "{e}");
    }

    #[test]
    fn a_provider_declared_by_its_issuer_or_its_urls_not_both() {
        let by_issuer = PROVIDERS
            .replace(
                "authorize_url = \"https://acme.example/oauth/authorize\"",
                "issuer = \"https://acme.example\"",
            )
            .replace("token_url = \"http://127.0.0.1:9/oauth/token\"\n", "");
        let file = parse_tools(&by_issuer, "t.toml", &settings).unwrap();
        assert_eq!(
            file.providers.get("acme").unwrap().endpoints,
            Endpoints::Issuer("https://acme.example".parse().unwrap())
        );
        let both = PROVIDERS.replace(
            "name = \"Acme CRM\"",
            "name = \"Acme CRM\"\nissuer = \"https://acme.example\"",
        );
        let e = parse_tools(&both, "t.toml", &settings).unwrap_err();
        assert!(e.reason.contains("not both"), "{e}");
        let plain = by_issuer.replace("https://acme.example\"", "http://acme.example\"");
        let e = parse_tools(&plain, "t.toml", &settings).unwrap_err();
        assert!(e.reason.contains("issuer must be https"), "{e}");
        let neither = by_issuer.replace("issuer = \"https://acme.example\"\n", "");
        let e = parse_tools(&neither, "t.toml", &settings).unwrap_err();
        assert!(e.reason.contains("needs issuer"), "{e}");
    }

    #[test]
    fn a_revocation_url_is_optional_and_checked_like_the_others() {
        let file = parse_tools(PROVIDERS, "t.toml", &settings).unwrap();
        assert_eq!(file.providers.get("acme").unwrap().revocation_url, None);
        let with = |u: &str| {
            PROVIDERS.replace(
                "client_id = \"runway\"",
                &format!("revocation_url = \"{u}\"\nclient_id = \"runway\""),
            )
        };
        let file = parse_tools(
            &with("https://acme.example/oauth/revoke"),
            "t.toml",
            &settings,
        )
        .unwrap();
        assert_eq!(
            file.providers.get("acme").unwrap().revocation_url,
            Some("https://acme.example/oauth/revoke".parse().unwrap())
        );
        let local = parse_tools(&with("http://127.0.0.1:9/revoke"), "t.toml", &settings).unwrap();
        assert!(
            local
                .providers
                .get("acme")
                .unwrap()
                .revocation_url
                .is_some()
        );
        let e = parse_tools(&with("http://acme.example/revoke"), "t.toml", &settings).unwrap_err();
        assert_eq!((e.line, e.column), (6, 18), "{e}");
        assert!(e.reason.contains("revocation_url must be https"), "{e}");
        let e = parse_tools(&with("https://u:p@acme.example/r"), "t.toml", &settings).unwrap_err();
        assert!(e.reason.contains("credentials"), "{e}");
    }

    #[test]
    fn a_provider_mistake_refuses_with_its_line() {
        let unknown = PROVIDERS.replace("auth = \"acme\"", "auth = \"globex\"");
        let e = parse_tools(&unknown, "t.toml", &settings).unwrap_err();
        assert_eq!(e.line, 14, "{e}");
        assert!(e.reason.contains("globex"), "{e}");
        let typo = PROVIDERS.replace("scopes", "scope");
        let e = parse_tools(&typo, "t.toml", &settings).unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        let plain = PROVIDERS.replace(
            "https://acme.example/oauth/authorize",
            "http://acme.example/a",
        );
        let e = parse_tools(&plain, "t.toml", &settings).unwrap_err();
        assert_eq!((e.line, e.column), (4, 17), "{e}");
        assert!(e.reason.contains("https"), "{e}");
        let e = parse_tools(PROVIDERS, "t.toml", &|_| None).unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        assert!(e.reason.contains("SHOP_TOKEN"), "{e}");
    }

    #[test]
    fn the_issue_example_parses() {
        let tools = parse_tools(GOOD, "RUNWAY_TOOLS", &settings).unwrap().tools;
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].method, http::Method::GET);
        assert!(!tools[0].approval);
        assert_eq!(tools[1].headers[0].0, "authorization");
        assert_eq!(tools[1].headers[0].1.expose(), "Bearer tok-123");
        assert!(tools[1].approval);
        assert!(!format!("{tools:?}").contains("tok-123"));
    }

    fn error_of(src: &str) -> ToolsFileError {
        parse_tools(src, "tools.toml", &settings).unwrap_err()
    }

    #[test]
    fn errors_name_the_line_and_the_reason() {
        let e = error_of(&GOOD.replace("method = \"POST\"", "method = \"FETCH\""));
        assert_eq!(e.line, 13, "{e}");
        assert!(e.reason.contains("method must be"), "{e}");
        assert!(e.to_string().starts_with("tools.toml, line 13"), "{e}");

        let e = error_of(&GOOD.replace("approval = true", "aproval = true"));
        assert_eq!(e.line, 16, "{e}");
        assert!(e.reason.contains("aproval"), "{e}");

        let e = error_of("[[tools]]\nname = \"x\"\nmethod = \"GET\"\nurl = \"https://a.example/\n");
        assert_eq!(e.line, 4, "{e}");

        let e = error_of(&GOOD.replace("${SHOP_TOKEN}", "${MISSING}"));
        assert_eq!(e.line, 15, "{e}");
        assert!(e.reason.contains("MISSING"), "{e}");

        let e = error_of(&GOOD.replace("city={city}", "city={town}"));
        assert_eq!(e.line, 7, "{e}");
        assert!(e.reason.contains("{town}"), "{e}");

        let e = error_of(&GOOD.replace("issue_refund", "get_weather"));
        assert_eq!(e.line, 10, "{e}");

        let e = error_of(&GOOD.replace("get_weather", "get weather"));
        assert_eq!(e.line, 3, "{e}");

        let e = error_of(&GOOD.replace("https://shop.example.com/refunds", "file:///etc/passwd"));
        assert_eq!(e.line, 14, "{e}");
    }

    // The tests of `[[mcp]]` entries need the `mcp` feature: without it an entry is refused
    // (`without_the_mcp_feature_an_mcp_server_is_refused_with_its_line`).
    #[cfg(feature = "mcp")]
    const WITH_MCP: &str = r#"
[[tools]]
name = "get_weather"
method = "GET"
url = "https://weather.example.com/now"

[[mcp]]
name = "crm"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${SHOP_TOKEN}" }
tools = ["search", "delete_contact"]
approval = ["delete_contact"]
timeout = 12.5

[[mcp]]
name = "docs"
url = "http://127.0.0.1:9000/mcp"
approval = true
"#;

    #[cfg(feature = "mcp")]
    #[test]
    fn mcp_servers_parse_with_their_headers_allow_list_approval_and_timeout() {
        let file = parse_tools(WITH_MCP, "tools.toml", &settings).unwrap();
        assert_eq!(file.tools.len(), 1);
        let [crm, docs] = &file.mcp[..] else {
            panic!("{:?}", file.mcp)
        };
        assert_eq!(crm.name, "crm");
        assert_eq!(crm.url.as_str(), "https://mcp.example.com/mcp");
        assert_eq!(crm.headers[0].0, "authorization");
        assert_eq!(crm.headers[0].1.expose(), "Bearer tok-123");
        assert_eq!(
            crm.allow,
            Some(vec!["search".to_owned(), "delete_contact".to_owned()])
        );
        assert_eq!(
            crm.approval,
            McpApproval::Only(vec!["delete_contact".into()])
        );
        assert_eq!(crm.timeout, Some(Duration::from_millis(12_500)));
        assert_eq!(docs.approval, McpApproval::Always);
        assert_eq!(docs.allow, None);
        assert_eq!(docs.timeout, None);
        assert!(!format!("{file:?}").contains("tok-123"));
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn bad_mcp_entries_are_refused_with_their_line() {
        let cases = [
            ("timeout = 12.5", "timout = 12.5", 13, "timout"),
            ("name = \"crm\"", "name = \"c_rm\"", 8, "MCP server name"),
            (
                "https://mcp.example.com/mcp",
                "ftp://mcp.example.com/",
                9,
                "absolute http",
            ),
            (
                "https://mcp.example.com/mcp",
                "https://u:p@mcp.example.com/",
                9,
                "credentials",
            ),
            ("${SHOP_TOKEN}", "${NOPE}", 10, "NOPE"),
            ("timeout = 12.5", "timeout = 0", 13, "timeout must be"),
            (
                "timeout = 12.5",
                "timeout = \"fast\"",
                13,
                "timeout must be",
            ),
            (
                "approval = true",
                "approval = \"yes\"",
                18,
                "approval must be",
            ),
            (
                "name = \"docs\"",
                "name = \"crm\"",
                16,
                "a second MCP server",
            ),
            (
                "name = \"get_weather\"",
                "name = \"crm_lookup\"",
                3,
                "collide",
            ),
        ];
        for (from, to, line, reason) in cases {
            let src = WITH_MCP.replacen(from, to, 1);
            let e = parse_tools(&src, "tools.toml", &settings).unwrap_err();
            assert!(e.reason.contains(reason), "{to}: {e}");
            if to.contains("crm_lookup") {
                // The HTTP tool is fine on its own; the server that claims its prefix is not.
                assert_eq!(e.line, 8, "{to}: {e}");
            } else {
                assert_eq!(e.line, line, "{to}: {e}");
            }
        }
    }

    /// serde read a table written as an array by position (`[name, url]` as an MCP server);
    /// it is refused where the array is written.
    #[test]
    fn an_entry_written_as_an_array_is_refused_where_it_is_written() {
        let e = error_of("mcp = [[\"crm\", \"https://mcp.example.com/mcp\"]]\n");
        assert_eq!((e.line, e.column), (1, 8), "{e}");
        assert!(
            e.reason.contains("expected struct RawMcp")
                && e.reason.contains("not as an array of its values"),
            "{e}"
        );
        let e = error_of(
            "tools = [{ name = \"a\", method = \"GET\", url = \"https://a.example/\" },\n\
             [\"b\", \"\", {}, \"GET\", \"https://a.example/\"]]\n",
        );
        assert_eq!((e.line, e.column), (2, 1), "{e}");
        assert!(e.reason.contains("expected struct RawTool"), "{e}");
    }

    #[test]
    fn placeholders_are_percent_encoded() {
        let url = fill_placeholders("https://a.example/x/{p}?q={q}", &|n| {
            Some(if n == "p" { "../admin" } else { "a b&c=d#e" }.to_owned())
        })
        .unwrap();
        assert_eq!(url, "https://a.example/x/..%2Fadmin?q=a%20b%26c%3Dd%23e");
        assert!(fill_placeholders("https://a.example/{p}", &|_| None).is_err());
    }

    /// Every RFC 3986 reserved character (and `%`, `\\`, space), alone and inside a value,
    /// stays inside its path segment: the URL keeps its host and its three segments, and the
    /// segment decodes back to the value.
    #[test]
    fn every_reserved_character_stays_inside_its_path_segment() {
        let template = "https://api.example.com/orders/{id}/status";
        for c in ":/?#[]@!$&'()*+,;=%\\ ".chars() {
            for v in [c.to_string(), format!("a{c}b"), format!("{c}{c}")] {
                let filled = fill_placeholders(template, &|_| Some(v.clone()))
                    .unwrap_or_else(|e| panic!("{v:?}: {e}"));
                let url = url::Url::parse(&filled).unwrap();
                assert_eq!(url.host_str(), Some("api.example.com"), "{v:?} -> {filled}");
                let segments: Vec<&str> = url.path_segments().unwrap().collect();
                assert_eq!(segments.len(), 3, "{v:?} -> {filled}");
                assert_eq!((segments[0], segments[2]), ("orders", "status"), "{filled}");
                let back = percent_decode(segments[1]);
                assert_eq!(back, v, "{filled}");
                assert_eq!(url.query(), None, "{v:?} -> {filled}");
                assert_eq!(url.fragment(), None, "{v:?} -> {filled}");
            }
        }
    }

    fn percent_decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dot_segments_are_refused_where_they_would_move_the_request() {
        let template = "https://api.example.com/v1/orders/{id}/status?q={q}";
        for bad in [".", ".."] {
            let e = fill_placeholders(template, &|n| {
                Some(if n == "id" { bad } else { "x" }.to_owned())
            })
            .unwrap_err();
            assert!(e.contains(".."), "{e}");
        }
        // Dots elsewhere are data: inside a segment, or in the query.
        for ok in ["...", "a..", "..b", ".hidden"] {
            let filled = fill_placeholders(template, &|_| Some(ok.to_owned())).unwrap();
            let url = url::Url::parse(&filled).unwrap();
            assert_eq!(url.path_segments().unwrap().count(), 4, "{ok} -> {url}");
        }
        let q = fill_placeholders(template, &|n| {
            Some(if n == "q" { ".." } else { "7" }.to_owned())
        })
        .unwrap();
        assert!(q.ends_with("/orders/7/status?q=.."), "{q}");
        // Two placeholders making one `..` segment together.
        assert!(fill_placeholders("https://a.example/x/{a}{b}/y", &|_| Some(".".into())).is_err());
        // The operator's own dots in the template are theirs.
        assert!(fill_placeholders("https://a.example/x/../{a}", &|_| Some("b".into())).is_ok());
    }

    #[test]
    fn redirects_setting() {
        let tools = parse_tools(GOOD, "t", &settings).unwrap().tools;
        assert_eq!(tools[0].redirects, Redirects::SameOrigin);
        for (v, want) in [("none", Redirects::None), ("any", Redirects::Any)] {
            let src = GOOD.replace(
                "approval = true",
                &format!("approval = true\nredirects = \"{v}\""),
            );
            assert_eq!(
                parse_tools(&src, "t", &settings).unwrap().tools[1].redirects,
                want
            );
        }
        let e = error_of(&GOOD.replace("approval = true", "redirects = \"some\""));
        assert_eq!(e.line, 16, "{e}");
        assert!(e.reason.contains("redirects"), "{e}");
    }
}
