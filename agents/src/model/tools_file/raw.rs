//! The tools file's tables as written, read from toml's parse by hand (`toml_settings`): unknown
//! keys are refused (a typo like `aproval` must not silently turn approval off), and every
//! value the checks in `tools_file` place an error at keeps its span.

use serde_json::Value;
use toml::Spanned;

use crate::toml_settings::{Error, Item, required};

/// The whole file.
#[derive(Default)]
pub(super) struct RawFile {
    pub(super) tools: Vec<RawTool>,
    pub(super) mcp: Vec<RawMcp>,
    pub(super) providers: std::collections::BTreeMap<String, RawProvider>,
}

/// `[providers.KEY]`.
pub(super) struct RawProvider {
    pub(super) name: Spanned<String>,
    pub(super) issuer: Option<Spanned<String>>,
    pub(super) authorize_url: Option<Spanned<String>>,
    pub(super) token_url: Option<Spanned<String>>,
    pub(super) revocation_url: Option<Spanned<String>>,
    pub(super) client_id: Spanned<String>,
    pub(super) client_secret: Option<Spanned<String>>,
    pub(super) scopes: Vec<String>,
}

/// `[[mcp]]`.
pub(super) struct RawMcp {
    pub(super) name: Spanned<String>,
    pub(super) url: Spanned<String>,
    /// Any header names (a table), with its span: a `${NAME}` problem points at it.
    pub(super) headers: Option<Spanned<Vec<(String, Item)>>>,
    pub(super) tools: Option<Spanned<Vec<String>>>,
    pub(super) approval: Option<RawApproval>,
    /// Seconds as written (`NaN` for a value that is not a number: refused by the check).
    pub(super) timeout: Option<Spanned<f64>>,
    pub(super) auth: Option<Spanned<String>>,
}

/// `approval = true | false | ["tool", …]`.
pub(super) enum RawApproval {
    All(bool),
    Only(Vec<String>),
}

/// `[[tools]]`.
pub(super) struct RawTool {
    pub(super) name: Spanned<String>,
    pub(super) description: String,
    pub(super) parameters: Option<Spanned<Value>>,
    pub(super) method: Spanned<String>,
    pub(super) url: Spanned<String>,
    /// Any header names (a table), with its span: a `${NAME}` problem points at it.
    pub(super) headers: Option<Spanned<Vec<(String, Item)>>>,
    pub(super) approval: bool,
    pub(super) redirects: Option<Spanned<String>>,
    pub(super) auth: Option<Spanned<String>>,
}

/// Reads the parsed file.
///
/// # Errors
/// An unknown key, a missing one, or a value of the wrong type, where it is written.
pub(super) fn read_file(doc: Item) -> Result<RawFile, Error> {
    let mut file = RawFile::default();
    doc.fields("RawFile", &["tools", "mcp", "providers"], &mut |key, v| {
        match key {
            "tools" => {
                file.tools = v
                    .array()?
                    .into_iter()
                    .map(read_tool)
                    .collect::<Result<_, _>>()?
            }
            "mcp" => {
                file.mcp = v
                    .array()?
                    .into_iter()
                    .map(read_mcp)
                    .collect::<Result<_, _>>()?
            }
            "providers" => {
                for (key, p) in v.map()? {
                    file.providers.insert(key, read_provider(p)?);
                }
            }
            _ => unreachable!("`{key}` is listed without its reader"),
        }
        Ok(())
    })?;
    Ok(file)
}

fn read_provider(item: Item) -> Result<RawProvider, Error> {
    let mut name = None;
    let mut issuer = None;
    let mut authorize_url = None;
    let mut token_url = None;
    let mut revocation_url = None;
    let mut client_id = None;
    let mut client_secret = None;
    let mut scopes = Vec::new();
    let span = item.fields(
        "RawProvider",
        &[
            "name",
            "issuer",
            "authorize_url",
            "token_url",
            "revocation_url",
            "client_id",
            "client_secret",
            "scopes",
        ],
        &mut |key, v| {
            match key {
                "name" => name = Some(v.spanned_string()?),
                "issuer" => issuer = Some(v.spanned_string()?),
                "authorize_url" => authorize_url = Some(v.spanned_string()?),
                "token_url" => token_url = Some(v.spanned_string()?),
                "revocation_url" => revocation_url = Some(v.spanned_string()?),
                "client_id" => client_id = Some(v.spanned_string()?),
                "client_secret" => client_secret = Some(v.spanned_string()?),
                "scopes" => scopes = v.strings()?,
                _ => unreachable!("`{key}` is listed without its reader"),
            }
            Ok(())
        },
    )?;
    Ok(RawProvider {
        name: required(name, "name", &span)?,
        issuer,
        authorize_url,
        token_url,
        revocation_url,
        client_id: required(client_id, "client_id", &span)?,
        client_secret,
        scopes,
    })
}

fn read_mcp(item: Item) -> Result<RawMcp, Error> {
    let mut name = None;
    let mut url = None;
    let mut headers = None;
    let mut tools = None;
    let mut approval = None;
    let mut timeout = None;
    let mut auth = None;
    let span = item.fields(
        "RawMcp",
        &[
            "name", "url", "headers", "tools", "approval", "timeout", "auth",
        ],
        &mut |key, v| {
            match key {
                "name" => name = Some(v.spanned_string()?),
                "url" => url = Some(v.spanned_string()?),
                "headers" => headers = Some(read_headers(v)?),
                "tools" => {
                    let span = v.span();
                    tools = Some(Spanned::new(span, v.strings()?));
                }
                "approval" => approval = Some(read_approval(v)?),
                "timeout" => timeout = Some(Spanned::new(v.span(), v.as_f64().unwrap_or(f64::NAN))),
                "auth" => auth = Some(v.spanned_string()?),
                _ => unreachable!("`{key}` is listed without its reader"),
            }
            Ok(())
        },
    )?;
    Ok(RawMcp {
        name: required(name, "name", &span)?,
        url: required(url, "url", &span)?,
        headers,
        tools,
        approval,
        timeout,
        auth,
    })
}

fn read_approval(v: Item) -> Result<RawApproval, Error> {
    if let Some(all) = v.as_bool() {
        return Ok(RawApproval::All(all));
    }
    let span = v.span();
    v.strings().map(RawApproval::Only).map_err(|_| {
        Error::at(
            &span,
            "approval must be true, false or a list of tool names".into(),
        )
    })
}

fn read_headers(v: Item) -> Result<Spanned<Vec<(String, Item)>>, Error> {
    let span = v.span();
    Ok(Spanned::new(span, v.map()?))
}

fn read_tool(item: Item) -> Result<RawTool, Error> {
    let mut name = None;
    let mut description = String::new();
    let mut parameters = None;
    let mut method = None;
    let mut url = None;
    let mut headers = None;
    let mut approval = false;
    let mut redirects = None;
    let mut auth = None;
    let span = item.fields(
        "RawTool",
        &[
            "name",
            "description",
            "parameters",
            "method",
            "url",
            "headers",
            "approval",
            "redirects",
            "auth",
        ],
        &mut |key, v| {
            match key {
                "name" => name = Some(v.spanned_string()?),
                "description" => description = v.string()?,
                "parameters" => parameters = Some(Spanned::new(v.span(), v.json())),
                "method" => method = Some(v.spanned_string()?),
                "url" => url = Some(v.spanned_string()?),
                "headers" => headers = Some(read_headers(v)?),
                "approval" => approval = v.bool()?,
                "redirects" => redirects = Some(v.spanned_string()?),
                "auth" => auth = Some(v.spanned_string()?),
                _ => unreachable!("`{key}` is listed without its reader"),
            }
            Ok(())
        },
    )?;
    Ok(RawTool {
        name: required(name, "name", &span)?,
        description,
        parameters,
        method: required(method, "method", &span)?,
        url: required(url, "url", &span)?,
        headers,
        approval,
        redirects,
        auth,
    })
}
