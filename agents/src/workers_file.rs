//! The workers file (`RUNWAY_WORKERS_FILE`, or inline `RUNWAY_WORKERS`): many Digital Workers
//! on one deployment, each Console `agentId` with its own agent, name and limits; per-workspace
//! overrides; model prices. Checked at start-up: an unknown key, a missing setting or an agent
//! that does not exist refuses to start, with the line and column.
//!
//! ```toml
//! [defaults]                       # inherited by every worker
//! agent = "model"                  # model | demo | echo | http-probe | a name registered in code
//! base_url = "https://api.openai.com/v1"
//! model = "gpt-4o-mini"
//! api_key = "${OPENAI_KEY}"        # ${NAME} read from the settings / secrets
//!
//! [prices."gpt-4o-mini"]           # USD per million tokens
//! input_per_million = 0.15
//! output_per_million = 0.60
//!
//! [workers."918273688800000200"]   # Console's agentId
//! name = "Order desk"
//! system_prompt = "You are the order desk."
//! tools_file = "desk-tools.toml"   # relative to this file
//!
//! [workers."918273688800000300"]
//! name = "HR helper"
//! system_prompt = "You answer HR questions."
//! limits = { tokens_per_day = 200000 }
//!
//! [workspaces."918273600000000001"] # Console's workspaceId ("*": every other workspace)
//! limits = { turns_per_minute = 10, spend_per_day = 2.0 }
//! model = "gpt-4o"                 # this customer's model workers use another model,
//! system_prompt_addition = "Answer in Vietnamese."
//! tools_allowed = ["lookup_order"] # and only these tools
//!
//! [workspaces."918273600000000001".workers."918273688800000300"]
//! limits = { turns_per_minute = 2 } # one worker within one workspace
//! ```

mod raw;

use std::sync::Arc;

use runway_core::adapter::Runtime;
use runway_core::{Price, SharedAgent, UsageLimits, Workers};
use toml::Spanned;

use crate::BuiltinAgent;
use crate::model::mcp::may_offer;
use crate::model::tools_file::{fill_settings, line_column};
use crate::model::{ModelAgent, ModelSettings, Secret, parse_tools};
use crate::settings::{WORKERS_FILE_SETTING, WORKERS_SETTING};
use crate::toml_settings;
use raw::{RawWorker, RawWorkspace};

/// The name a workers file gives the one agent a binary serves in code
/// (`runway::serve(MyAgent)`): `agent = "main"`.
pub const MAIN_AGENT: &str = "main";

/// A workers file that cannot be used: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}, line {line}, column {column}: {reason}")]
pub struct WorkersFileError {
    /// `RUNWAY_WORKERS` or the file's path.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub reason: String,
}

/// Reads the workers file from the settings, if one is set: `RUNWAY_WORKERS_FILE` (a path,
/// read with `read_file`) or `RUNWAY_WORKERS` (the file itself). `code` holds the agents the
/// binary registered (by name, or [`Workers::any`] for its one agent, `agent = "main"`).
///
/// # Errors
/// Both settings set, the file unreadable, or refused ([`load_workers`]).
pub fn workers_from_settings<R: Runtime + Clone>(
    code: &Workers,
    rt: &R,
    setting: &dyn Fn(&str) -> Option<String>,
    read_file: &dyn Fn(&str) -> Result<String, String>,
    prepare: &dyn Fn(ModelAgent<R>) -> ModelAgent<R>,
) -> Result<Option<Workers>, String> {
    let non_empty = |k: &str| setting(k).filter(|v| !v.trim().is_empty());
    match (non_empty(WORKERS_FILE_SETTING), non_empty(WORKERS_SETTING)) {
        (Some(_), Some(_)) => Err(format!(
            "set {WORKERS_FILE_SETTING} or {WORKERS_SETTING}, not both"
        )),
        (Some(path), None) => {
            let path = path.trim();
            let text = read_file(path)
                .map_err(|e| format!("{WORKERS_FILE_SETTING}: cannot read {path}: {e}"))?;
            let dir = path.rfind('/').map(|i| &path[..=i]).unwrap_or("");
            let read_relative = |p: &str| {
                if p.starts_with('/') {
                    read_file(p)
                } else {
                    read_file(&format!("{dir}{p}"))
                }
            };
            load_workers(&text, path, code, rt, setting, &read_relative, prepare)
                .map(Some)
                .map_err(|e| e.to_string())
        }
        (None, Some(inline)) => load_workers(
            &inline,
            WORKERS_SETTING,
            code,
            rt,
            setting,
            read_file,
            prepare,
        )
        .map(Some)
        .map_err(|e| e.to_string()),
        (None, None) => Ok(None),
    }
}

/// For a native binary (`runway serve`, Lambda), once
/// [`workers_file_set`](crate::settings::workers_file_set) found a workers
/// file in the process environment: the workers of `RUNWAY_WORKERS_FILE` (read from disk) or
/// `RUNWAY_WORKERS`, with `agent` as `agent = "main"` (or its registered names, if it is a
/// [`Workers`]). `setting` reads the settings, `${NAME}` references included (each runtime
/// says where they come from); `prepare` finishes each model agent as the runtime runs its
/// built-in one (its attachment store, its clients).
///
/// # Errors
/// As [`workers_from_settings`], and no workers file in `setting`.
pub fn workers_from_env<A: runway_core::Agent, R: Runtime + Clone>(
    agent: A,
    rt: &R,
    setting: &dyn Fn(&str) -> Option<String>,
    prepare: &dyn Fn(ModelAgent<R>) -> ModelAgent<R>,
) -> Result<Workers, String> {
    let code = Workers::from_agent(agent);
    workers_from_settings(&code, rt, setting, &crate::read_start_up_text, prepare)?
        .ok_or_else(|| format!("no workers file: set {WORKERS_FILE_SETTING} or {WORKERS_SETTING}"))
}

/// Parses and checks a workers file and builds its workers. `origin` names it in errors;
/// `setting` reads `${NAME}` references (and what built-in agents need); `read_file` reads a
/// worker's `tools_file`; `prepare` finishes each model agent for the runtime (its attachment
/// store, its download client).
///
/// # Errors
/// The first problem, with its line and column.
pub fn load_workers<R: Runtime + Clone>(
    source: &str,
    origin: &str,
    code: &Workers,
    rt: &R,
    setting: &dyn Fn(&str) -> Option<String>,
    read_file: &dyn Fn(&str) -> Result<String, String>,
    prepare: &dyn Fn(ModelAgent<R>) -> ModelAgent<R>,
) -> Result<Workers, WorkersFileError> {
    let err_at = |offset: usize, reason: String| {
        let (line, column) = line_column(source, offset);
        WorkersFileError {
            origin: origin.to_owned(),
            line,
            column,
            reason,
        }
    };
    let raw = toml_settings::parse(source)
        .and_then(raw::read_file)
        .map_err(|e| {
            err_at(
                e.span().map_or(0, |s| s.start),
                e.message().trim().to_owned(),
            )
        })?;
    if raw.workers.is_empty() {
        return Err(err_at(
            0,
            "no [workers.\"<agentId>\"] table: name at least one worker".into(),
        ));
    }
    let mut workers = Workers::new();
    for (model, p) in &raw.prices {
        workers = workers.price(
            model.clone(),
            Price {
                input_per_million: p.input_per_million,
                output_per_million: p.output_per_million,
            },
        );
    }
    let any_spend_limit = raw
        .workspaces
        .values()
        .flat_map(|w| {
            let w = w.get_ref();
            std::iter::once(w.overrides.limits)
                .chain(w.workers.values().map(|o| o.get_ref().limits))
        })
        .flatten()
        .chain(raw.defaults.limits)
        .chain(raw.workers.values().filter_map(|w| w.get_ref().limits))
        .any(|l| l.spend_per_day.is_some() || l.spend_per_month.is_some());
    let check_price = |model: &Spanned<String>| {
        if any_spend_limit && !raw.prices.contains_key(model.get_ref()) {
            return Err(err_at(
                model.span().start,
                format!(
                    "a spend limit is set, but [prices.{:?}] is missing: its spend would count as 0",
                    model.get_ref()
                ),
            ));
        }
        Ok(())
    };
    for (id, spanned) in &raw.workers {
        let at = spanned.span().start;
        runway_core::protocol::validate_id("workers", id)
            .map_err(|e| err_at(at, format!("{id:?}: {}", e.message())))?;
        let w = merged(&raw.defaults, spanned.get_ref());
        if let Some(name) = &w.name {
            workers = workers.name(id.clone(), name.clone());
        }
        let limits = raw
            .defaults
            .limits
            .map(UsageLimits::from)
            .unwrap_or_default()
            .overridden_by(
                &spanned
                    .get_ref()
                    .limits
                    .map(UsageLimits::from)
                    .unwrap_or_default(),
            );
        if !limits.is_empty() {
            workers = workers.worker_limits(id.clone(), limits);
        }
        let agent_name = w.agent.as_ref().map(|a| a.get_ref().trim().to_owned());
        let (agent, model): (SharedAgent, Option<ModelAgent<R>>) = match agent_name.as_deref() {
            Some("model") => {
                let settings = model_settings(&w, id, setting, read_file, &err_at, at)?;
                if let Some(m) = &w.model {
                    check_price(m)?;
                }
                let agent = prepare(ModelAgent::new(settings, rt.clone()));
                (Arc::new(agent.clone()), Some(agent))
            }
            Some(builtin @ ("demo" | "echo" | "http-probe")) => {
                let agent = BuiltinAgent::from_settings(builtin, rt, setting)
                    .map_err(|e| err_at(w.agent.as_ref().map_or(at, |a| a.span().start), e))?;
                (Arc::new(agent) as SharedAgent, None)
            }
            Some(name) => {
                let found = if name == MAIN_AGENT {
                    code.registered(MAIN_AGENT).or_else(|| code.fallback())
                } else {
                    code.registered(name)
                };
                let agent = found.ok_or_else(|| {
                    err_at(
                        w.agent.as_ref().map_or(at, |a| a.span().start),
                        format!(
                            "agent {name:?} is neither model, demo, echo, http-probe nor an agent this binary registered{}",
                            if name == "http_probe" { " (did you mean http-probe?)" } else { "" }
                        ),
                    )
                })?;
                (agent, None)
            }
            None => {
                let agent = code.registered(id).or_else(|| code.fallback()).ok_or_else(|| {
                    err_at(
                        at,
                        format!(
                            "worker {id:?} has no agent: set agent = \"model\" (or a built-in) here or in [defaults]"
                        ),
                    )
                })?;
                (agent, None)
            }
        };
        workers = workers.add_shared(id.clone(), agent);
        // Its tools file's providers: served for its turns (per-workspace variants keep them).
        if let Some(m) = &model
            && !m.settings().providers.is_empty()
        {
            workers = workers.providers(id.clone(), m.settings().providers.clone());
        }
        // Per-workspace variants of a model worker. `*`'s is served in every workspace
        // without a table of its own: a workspace's own table replaces `*`'s settings (as its
        // limits replace `*`'s), so one that changes nothing gets the worker as it is.
        let any_variant = model.is_some()
            && raw
                .workspaces
                .get(runway_core::meter::ANY_WORKSPACE)
                .is_some_and(|ws| changes_agent(ws.get_ref(), id));
        for (ws_id, ws) in &raw.workspaces {
            let ws = ws.get_ref();
            let pair = ws.workers.get(id);
            let overrides = [Some(&ws.overrides), pair.map(Spanned::get_ref)];
            if !changes_agent(ws, id) {
                if any_variant
                    && ws_id != runway_core::meter::ANY_WORKSPACE
                    && let Some(model_agent) = &model
                {
                    workers =
                        workers.add_for_workspace(id, ws_id.clone(), Arc::new(model_agent.clone()));
                }
                continue;
            }
            let Some(model_agent) = &model else {
                if let Some(pair) = pair {
                    return Err(err_at(
                        pair.span().start,
                        format!(
                            "worker {id:?} is not a model agent: only limits can be set for it per workspace"
                        ),
                    ));
                }
                continue;
            };
            let mut settings = model_agent.settings().clone();
            for o in overrides.into_iter().flatten() {
                if let Some(m) = &o.model {
                    check_price(m)?;
                    settings.model = m.get_ref().clone();
                }
                if let Some(add) = &o.system_prompt_addition {
                    settings.system_prompt = Some(match settings.system_prompt.take() {
                        Some(p) => format!("{p}\n\n{add}"),
                        None => add.clone(),
                    });
                }
                if let Some(allowed) = &o.tools_allowed {
                    // Tools by the names the model sees: an HTTP tool's, or an MCP server's
                    // `{server}_{tool}` (the server is not contacted at start-up: its prefix,
                    // and its `tools` list if it has one, must fit).
                    let base = model_agent.settings();
                    for name in allowed.get_ref() {
                        let http = base.tools.iter().any(|t| &t.name == name);
                        if !http && !base.mcp.iter().any(|m| may_offer(m, name)) {
                            return Err(err_at(
                                allowed.span().start,
                                format!(
                                    "tools_allowed names {name:?}, which worker {id:?} does not have (an MCP server's tool is named {{server}}_{{tool}})"
                                ),
                            ));
                        }
                    }
                    settings
                        .tools
                        .retain(|t| allowed.get_ref().contains(&t.name));
                    let narrowed = match settings.tools_allowed.take() {
                        Some(before) => before
                            .into_iter()
                            .filter(|n| allowed.get_ref().contains(n))
                            .collect(),
                        None => allowed.get_ref().clone(),
                    };
                    settings.tools_allowed = Some(narrowed);
                }
            }
            workers = workers.add_for_workspace(
                id,
                ws_id.clone(),
                Arc::new(model_agent.with_settings(settings)),
            );
        }
    }
    for (ws_id, ws) in &raw.workspaces {
        let at = ws.span().start;
        let ws = ws.get_ref();
        if ws_id != runway_core::meter::ANY_WORKSPACE {
            runway_core::protocol::validate_id("workspaces", ws_id)
                .map_err(|e| err_at(at, format!("{ws_id:?}: {}", e.message())))?;
        }
        if let Some(l) = ws.overrides.limits {
            workers = workers.workspace_limits(ws_id.clone(), l.into());
        }
        for (id, pair) in &ws.workers {
            if !raw.workers.contains_key(id) {
                return Err(err_at(
                    pair.span().start,
                    format!("workspaces.{ws_id:?}.workers names {id:?}, which is not in [workers]"),
                ));
            }
            if let Some(l) = pair.get_ref().limits {
                workers = workers.worker_limits_in(ws_id.clone(), id.clone(), l.into());
            }
        }
    }
    Ok(workers)
}

/// Whether workspace table `ws` changes worker `id`'s agent (its model, prompt or tools), for
/// all workers or for `id` alone.
fn changes_agent(ws: &RawWorkspace, id: &str) -> bool {
    let pair = ws.workers.get(id).map(Spanned::get_ref);
    [Some(&ws.overrides), pair].into_iter().flatten().any(|o| {
        o.model.is_some() || o.system_prompt_addition.is_some() || o.tools_allowed.is_some()
    })
}

/// A worker's settings over the defaults.
fn merged(defaults: &RawWorker, w: &RawWorker) -> RawWorker {
    let d = defaults.clone();
    let w = w.clone();
    let own_tools = w.tools.is_some() || w.tools_file.is_some();
    RawWorker {
        name: w.name,
        agent: w.agent.or(d.agent),
        base_url: w.base_url.or(d.base_url),
        model: w.model.or(d.model),
        api_key: w.api_key.or(d.api_key),
        system_prompt: w.system_prompt.or(d.system_prompt),
        // A worker's tools replace the defaults' (one or the other, never both).
        tools_file: if own_tools {
            w.tools_file
        } else {
            d.tools_file
        },
        tools: if own_tools { w.tools } else { d.tools },
        limits: w.limits,
    }
}

/// A model worker's settings: its endpoint, model, key, prompt and tools.
fn model_settings(
    w: &RawWorker,
    id: &str,
    setting: &dyn Fn(&str) -> Option<String>,
    read_file: &dyn Fn(&str) -> Result<String, String>,
    err_at: &dyn Fn(usize, String) -> WorkersFileError,
    at: usize,
) -> Result<ModelSettings, WorkersFileError> {
    let filled = |v: &Spanned<String>| {
        fill_settings(v.get_ref(), setting).map_err(|r| err_at(v.span().start, r))
    };
    let base = w.base_url.as_ref().ok_or_else(|| {
        err_at(
            at,
            format!("worker {id:?} is a model agent without base_url"),
        )
    })?;
    let model = w
        .model
        .as_ref()
        .ok_or_else(|| err_at(at, format!("worker {id:?} is a model agent without model")))?;
    let mut s = ModelSettings::new(filled(base)?.trim(), filled(model)?.trim())
        .map_err(|e| err_at(base.span().start, e.to_string()))?;
    // Downloads and tool calls as the deployment's built-in model agent does them.
    s.apply_deployment_settings(setting)
        .map_err(|e| err_at(at, e.to_string()))?;
    if let Some(key) = &w.api_key {
        let key = filled(key)?;
        if http::HeaderValue::try_from(format!("Bearer {}", key.trim())).is_err() {
            return Err(err_at(at, "api_key is not usable in an HTTP header".into()));
        }
        s.api_key = Some(Secret::new(key.trim()));
    }
    s.system_prompt = w.system_prompt.clone().filter(|p| !p.trim().is_empty());
    match (&w.tools_file, &w.tools) {
        (Some(a), Some(_)) => {
            return Err(err_at(
                a.span().start,
                "set tools_file or tools, not both".into(),
            ));
        }
        (Some(path), None) => {
            let text = read_file(path.get_ref().trim()).map_err(|e| {
                err_at(
                    path.span().start,
                    format!("cannot read {}: {e}", path.get_ref()),
                )
            })?;
            let file = parse_tools(&text, path.get_ref().trim(), setting)
                .map_err(|e| err_at(path.span().start, e.to_string()))?;
            s.tools = file.tools;
            s.mcp = file.mcp;
            s.providers = file.providers;
        }
        (None, Some(inline)) => {
            let file = parse_tools(inline.get_ref(), &format!("workers.{id:?}.tools"), setting)
                .map_err(|e| err_at(inline.span().start, e.to_string()))?;
            s.tools = file.tools;
            s.mcp = file.mcp;
            s.providers = file.providers;
        }
        (None, None) => {}
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runway_core::adapter::TokioRuntime;

    /// The issue's minimal file, as written.
    const MINIMAL: &str = r#"
[defaults]                       # inherited by every worker
agent = "model"
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
api_key = "${OPENAI_KEY}"        # ${NAME} read from the settings / secrets

[prices."gpt-4o-mini"]           # USD per million tokens, for spend estimates and limits
input_per_million = 0.15
output_per_million = 0.60

[workers."918273688800000200"]   # Console's agentId
name = "Order desk"
system_prompt = "You are the order desk."
tools_file = "desk-tools.toml"

[workers."918273688800000300"]
name = "HR helper"
system_prompt = "You answer HR questions."
limits = { tokens_per_day = 200000 }

[workspaces."918273600000000001"] # Console's workspaceId
limits = { turns_per_minute = 10, spend_per_day = 2.0 }
"#;

    const DESK_TOOLS: &str = "[[tools]]\nname = \"lookup_order\"\nmethod = \"GET\"\nurl = \"https://shop.example.com/orders/{id}\"\nparameters = { type = \"object\", properties = { id = { type = \"string\" } } }\n";

    fn setting(k: &str) -> Option<String> {
        (k == "OPENAI_KEY").then(|| "sk-test".to_owned())
    }

    fn read(path: &str) -> Result<String, String> {
        match path {
            "/etc/runway/desk-tools.toml" | "desk-tools.toml" => Ok(DESK_TOOLS.into()),
            "/etc/runway/workers.toml" => Ok(MINIMAL.into()),
            other => Err(format!("no file {other}")),
        }
    }

    fn load(src: &str) -> Result<Workers, WorkersFileError> {
        load_workers(
            src,
            "workers.toml",
            &Workers::new(),
            &TokioRuntime,
            &setting,
            &read,
            &|m| m,
        )
    }

    #[test]
    fn the_minimal_file_works_as_written() {
        let lookup = |k: &str| match k {
            WORKERS_FILE_SETTING => Some("/etc/runway/workers.toml".to_owned()),
            k => setting(k),
        };
        let w = workers_from_settings(&Workers::new(), &TokioRuntime, &lookup, &read, &|m| m)
            .unwrap()
            .expect("a workers file is set");
        let p = w.policy();
        assert!(p.serves("918273688800000200") && p.serves("918273688800000300"));
        assert!(!p.serves("918273688800000400"));
        assert_eq!(p.name("918273688800000300"), Some("HR helper"));
        assert_eq!(p.price("gpt-4o-mini").unwrap().output_per_million, 0.60);
        assert!(w.agent_for("918273688800000200", "x").is_some());
        assert!(w.agent_for("918273688800000999", "x").is_none());
    }

    /// A model worker downloads and calls tools under the settings the built-in model agent
    /// reads (`RUNWAY_ATTACHMENTS_*`, `RUNWAY_MAX_PARALLEL_TOOL_CALLS`), and reaches `prepare`
    /// with them, as the runtime's built-in one would.
    #[test]
    fn model_workers_take_the_runtimes_download_and_tool_call_settings() {
        let runtime = |k: &str| match k {
            "RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK" => Some("1".to_owned()),
            "RUNWAY_ATTACHMENTS_MAX_BYTES" => Some("2000".to_owned()),
            "RUNWAY_ATTACHMENTS_MAX_THREAD_BYTES" => Some("9000".to_owned()),
            "RUNWAY_MAX_PARALLEL_TOOL_CALLS" => Some("2".to_owned()),
            k => setting(k),
        };
        let prepared = std::sync::Mutex::new(Vec::new());
        let prepare = |m: ModelAgent<TokioRuntime>| {
            prepared.lock().unwrap().push(m.settings().clone());
            m
        };
        load_workers(
            MINIMAL,
            "w.toml",
            &Workers::new(),
            &TokioRuntime,
            &runtime,
            &read,
            &prepare,
        )
        .unwrap();
        let prepared = prepared.into_inner().unwrap();
        assert_eq!(prepared.len(), 2);
        for s in prepared {
            assert!(s.attachments.policy.allow_loopback);
            assert_eq!(s.attachments.max_bytes, 2000);
            assert_eq!(s.attachments.max_thread_bytes, 9000);
            assert_eq!(s.max_tool_calls_per_reply, 2);
            assert_eq!(s.api_key.as_ref().map(|k| k.expose()), Some("sk-test"));
        }
        // A value the built-in agent refuses is refused here too.
        let bad = |k: &str| match k {
            "RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK" => Some("yes".to_owned()),
            k => setting(k),
        };
        let e = load_workers(
            MINIMAL,
            "w.toml",
            &Workers::new(),
            &TokioRuntime,
            &bad,
            &read,
            &|m| m,
        )
        .unwrap_err();
        assert!(
            e.reason.contains("RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK"),
            "{e}"
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_line_and_column() {
        let e = load(&MINIMAL.replace(
            "system_prompt = \"You answer",
            "sytem_prompt = \"You answer",
        ))
        .unwrap_err();
        assert_eq!((e.line, e.column), (19, 1), "{e}");
        assert!(e.reason.contains("sytem_prompt"), "{e}");
        let e =
            load(&MINIMAL.replace("turns_per_minute = 10", "turns_per_minut = 10")).unwrap_err();
        assert_eq!(e.line, 23, "{e}");
        let e = load(&MINIMAL.replace("${OPENAI_KEY}", "${MISSING_KEY}")).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.reason.contains("MISSING_KEY"), "{e}");
        let e =
            load(&MINIMAL.replace("[prices.\"gpt-4o-mini\"]", "[prices.\"gpt-4o\"]")).unwrap_err();
        assert!(e.reason.contains("prices"), "{e}");
        let e = load(&MINIMAL.replace("agent = \"model\"", "agent = \"desk\"")).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = load(&MINIMAL.replace("desk-tools.toml", "missing.toml")).unwrap_err();
        assert_eq!(e.line, 15, "{e}");
        assert!(e.to_string().starts_with("workers.toml, line 15"), "{e}");
    }

    /// serde read a table written as an array by position: `limits = [10, 0, 2.0, 3.0]` was
    /// 10 turns a minute, 0 tokens a day, $2 a day and $3 a month, which no reader of the file
    /// could tell. It is refused where the array is written.
    #[test]
    fn a_table_written_as_an_array_is_refused_where_it_is_written() {
        let e = load(&MINIMAL.replace(
            "limits = { tokens_per_day = 200000 }",
            "limits = [10, 0, 2.0, 3.0]",
        ))
        .expect_err("limits by position");
        assert_eq!((e.line, e.column), (20, 10), "{e}");
        assert!(
            e.reason.contains("expected struct RawLimits")
                && e.reason.contains("not as an array of its values"),
            "{e}"
        );
        let e = load(
            &MINIMAL
                .replace("[prices.\"gpt-4o-mini\"]", "[prices]")
                .replace(
                    "input_per_million = 0.15\noutput_per_million = 0.60",
                    "\"gpt-4o-mini\" = [0.15, 0.60]",
                ),
        )
        .expect_err("a price by position");
        assert_eq!((e.line, e.column), (9, 17), "{e}");
        assert!(e.reason.contains("not as an array of its values"), "{e}");
    }

    /// Issue 25: a spend limit of `nan`, `inf` or a negative number was accepted and refused
    /// every turn; a negative or `nan` price made every cost 0.
    #[test]
    fn spend_limits_and_prices_that_are_not_dollars_are_refused_with_their_line() {
        for bad in ["nan", "inf", "-inf", "-2.0"] {
            let e =
                load(&MINIMAL.replace("spend_per_day = 2.0", &format!("spend_per_day = {bad}")))
                    .expect_err("not a spend limit");
            assert_eq!(e.line, 23, "{bad}: {e}");
            assert!(
                e.reason.contains("not an amount in US dollars"),
                "{bad}: {e}"
            );
            let e = load(&MINIMAL.replace(
                "output_per_million = 0.60",
                &format!("output_per_million = {bad}"),
            ))
            .expect_err("not a price");
            assert_eq!(e.line, 10, "{bad}: {e}");
            assert!(
                e.reason.contains("not an amount in US dollars"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn workspace_overrides_and_code_agents() {
        let src = format!(
            "{MINIMAL}model = \"gpt-4o-mini\"\nsystem_prompt_addition = \"Answer in Vietnamese.\"\n\
             [workspaces.\"918273600000000001\".workers.\"918273688800000200\"]\ntools_allowed = [\"lookup_order\"]\n\
             limits = {{ turns_per_minute = 2 }}\n\
             [workers.\"918273688800000500\"]\nagent = \"desk\"\n[workers.\"918273688800000600\"]\nagent = \"echo\"\n"
        );
        let code = Workers::new().add("desk", crate::EchoAgent);
        let w = load_workers(
            &src,
            "w.toml",
            &code,
            &TokioRuntime,
            &setting,
            &read,
            &|m| m,
        )
        .unwrap();
        assert!(w.policy().serves("918273688800000500"));
        let e = load_workers(
            &src.replace("[\"lookup_order\"]", "[\"refund\"]"),
            "w.toml",
            &code,
            &TokioRuntime,
            &setting,
            &read,
            &|m| m,
        )
        .unwrap_err();
        assert!(e.reason.contains("refund"), "{e}");
        let e = load(&src).unwrap_err();
        assert!(e.reason.contains("\"desk\""), "{e}");
    }
    /// `tools_allowed` names MCP tools as the model sees them (`{server}_{tool}`): accepted by
    /// the server's prefix (and its `tools` list if it has one), without contacting it; any
    /// other name refuses start-up.
    #[cfg(feature = "mcp")]
    #[test]
    fn tools_allowed_takes_mcp_tools_by_the_names_the_model_sees() {
        let tools = r#"tools = '''
[[mcp]]
name = "crm"
url = "https://crm.example.com/mcp"

[[mcp]]
name = "ops"
url = "https://ops.example.com/mcp"
tools = ["restart"]
'''"#;
        let file = |allowed: &str| {
            MINIMAL.replace("tools_file = \"desk-tools.toml\"", tools)
                + &format!(
                    "[workspaces.\"918273600000000001\".workers.\"918273688800000200\"]\n\
                     tools_allowed = {allowed}\n"
                )
        };
        let w = load(&file(r#"["crm_search", "ops_restart"]"#)).unwrap();
        assert!(
            w.agent_for("918273688800000200", "918273600000000001")
                .is_some()
        );
        for refused in ["crm", "crm_", "ops_wipe", "get_weather"] {
            let e = load(&file(&format!("[\"{refused}\"]"))).unwrap_err();
            assert!(e.reason.contains(&format!("{refused:?}")), "{refused}: {e}");
        }
    }

    /// Issue 27: a worker's inline tools may name a provider on an `[[mcp]]` entry; an unknown
    /// one refuses start-up, naming the worker's tools, the line and the reason.
    #[cfg(feature = "mcp")]
    #[test]
    fn a_workers_mcp_server_may_act_as_the_user() {
        let tools = |auth: &str| {
            format!(
                r#"tools = '''
[providers.acme]
name = "Acme CRM"
authorize_url = "https://acme.example/oauth/authorize"
token_url = "https://acme.example/oauth/token"
client_id = "runway"

[[mcp]]
name = "crm"
url = "https://crm.example.com/mcp"
auth = "{auth}"
'''"#
            )
        };
        let file = |auth: &str| MINIMAL.replace("tools_file = \"desk-tools.toml\"", &tools(auth));
        let w = load(&file("acme")).unwrap();
        assert!(
            w.agent_for("918273688800000200", "918273600000000001")
                .is_some()
        );
        let e = load(&file("globex")).unwrap_err();
        assert!(
            e.reason.contains("line 10, column 8")
                && e.reason.contains("names no [providers.globex]"),
            "{e}"
        );
    }

    /// Issue 25: `[workspaces."*"]`'s `system_prompt_addition` and `tools_allowed` were accepted
    /// and never applied. They apply in every workspace without a table of its own; a
    /// workspace's own table (here one with limits only) replaces them.
    #[tokio::test]
    async fn any_workspace_prompt_addition_and_tools_apply_where_no_table_replaces_them() {
        use runway_core::testing::{ScriptedHttp, ScriptedResponse, TestTurn};
        let src = format!(
            "{MINIMAL}\n[workspaces.\"*\"]\nsystem_prompt_addition = \"Be brief.\"\ntools_allowed = []\n"
        );
        let workers = load(&src).unwrap();
        let model_request = |workspace: &'static str| {
            let workers = workers.clone();
            async move {
                let answer = ScriptedResponse::text(
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
                )
                .header("content-type", "text/event-stream");
                let http =
                    ScriptedHttp::new().post("https://api.openai.com/v1/chat/completions", answer);
                TestTurn::new("Where is my order?")
                    .agent_id("918273688800000200")
                    .workspace(workspace)
                    .http_client(http.clone())
                    .run(workers)
                    .await;
                let sent = http.requests();
                assert_eq!(sent.len(), 1, "{sent:?}");
                serde_json::from_slice::<serde_json::Value>(&sent[0].body).unwrap()
            }
        };
        let system = |req: &serde_json::Value| req["messages"][0]["content"].to_string();
        // No table of its own: `*`'s addition, and none of the desk's tools.
        let req = model_request("918273600000000777").await;
        assert!(
            system(&req).contains("You are the order desk.\\n\\nBe brief."),
            "{req}"
        );
        assert!(req["tools"].as_array().is_none_or(Vec::is_empty), "{req}");
        // Its own table: the worker as it is.
        let req = model_request("918273600000000001").await;
        assert!(!system(&req).contains("Be brief."), "{req}");
        assert_eq!(req["tools"][0]["function"]["name"], "lookup_order", "{req}");
    }
}
