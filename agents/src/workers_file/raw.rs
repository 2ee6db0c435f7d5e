//! The workers file's tables as written, read from toml's parse by hand (`toml_settings`):
//! unknown keys are refused, and every value the checks in `workers_file` place an error at
//! keeps its span.

use std::collections::BTreeMap;

use runway_core::UsageLimits;
use toml::Spanned;

use crate::toml_settings::{Error, Item, required};

/// The whole file.
#[derive(Default)]
pub(super) struct RawFile {
    pub(super) defaults: RawWorker,
    pub(super) prices: BTreeMap<String, RawPrice>,
    pub(super) workers: BTreeMap<String, Spanned<RawWorker>>,
    pub(super) workspaces: BTreeMap<String, Spanned<RawWorkspace>>,
}

/// `[defaults]` and `[workers."<agentId>"]`.
#[derive(Default, Clone)]
pub(super) struct RawWorker {
    pub(super) name: Option<String>,
    pub(super) agent: Option<Spanned<String>>,
    pub(super) base_url: Option<Spanned<String>>,
    pub(super) model: Option<Spanned<String>>,
    pub(super) api_key: Option<Spanned<String>>,
    pub(super) system_prompt: Option<String>,
    pub(super) tools_file: Option<Spanned<String>>,
    pub(super) tools: Option<Spanned<String>>,
    pub(super) limits: Option<RawLimits>,
}

/// `[prices."<model>"]`, US dollars per million tokens.
#[derive(Clone, Copy)]
pub(super) struct RawPrice {
    pub(super) input_per_million: f64,
    pub(super) output_per_million: f64,
}

/// `limits = { … }`.
#[derive(Default, Clone, Copy)]
pub(super) struct RawLimits {
    pub(super) turns_per_minute: Option<u64>,
    pub(super) tokens_per_day: Option<u64>,
    pub(super) spend_per_day: Option<f64>,
    pub(super) spend_per_month: Option<f64>,
}

impl From<RawLimits> for UsageLimits {
    fn from(r: RawLimits) -> Self {
        UsageLimits {
            turns_per_minute: r.turns_per_minute,
            tokens_per_day: r.tokens_per_day,
            spend_per_day: r.spend_per_day,
            spend_per_month: r.spend_per_month,
        }
    }
}

/// What a workspace changes for its workers: for all of them (`[workspaces."<id>"]`) or one
/// (`[workspaces."<id>".workers."<agentId>"]`).
#[derive(Default, Clone)]
pub(super) struct RawOverride {
    pub(super) model: Option<Spanned<String>>,
    pub(super) system_prompt_addition: Option<String>,
    pub(super) tools_allowed: Option<Spanned<Vec<String>>>,
    pub(super) limits: Option<RawLimits>,
}

/// `[workspaces."<id>"]`: its overrides for every worker, and `workers."<agentId>"` tables for
/// one worker.
#[derive(Default)]
pub(super) struct RawWorkspace {
    pub(super) overrides: RawOverride,
    pub(super) workers: BTreeMap<String, Spanned<RawOverride>>,
}

/// The keys of [`RawOverride`], which [`RawWorkspace`] has too (and `workers` after them).
const OVERRIDE_FIELDS: [&str; 4] = ["model", "system_prompt_addition", "tools_allowed", "limits"];

/// Reads the parsed file.
///
/// # Errors
/// An unknown key, a missing one, or a value of the wrong type, where it is written.
pub(super) fn read_file(doc: Item) -> Result<RawFile, Error> {
    let mut file = RawFile::default();
    doc.fields(
        "RawFile",
        &["defaults", "prices", "workers", "workspaces"],
        &mut |key, v| {
            match key {
                "defaults" => file.defaults = read_worker(v)?,
                "prices" => {
                    for (model, p) in v.map()? {
                        file.prices.insert(model, read_price(p)?);
                    }
                }
                "workers" => {
                    for (id, w) in v.map()? {
                        let span = w.span();
                        file.workers.insert(id, Spanned::new(span, read_worker(w)?));
                    }
                }
                "workspaces" => {
                    for (id, ws) in v.map()? {
                        let span = ws.span();
                        file.workspaces
                            .insert(id, Spanned::new(span, read_workspace(ws)?));
                    }
                }
                _ => unreachable!("`{key}` is listed without its reader"),
            }
            Ok(())
        },
    )?;
    Ok(file)
}

fn read_worker(item: Item) -> Result<RawWorker, Error> {
    let mut w = RawWorker::default();
    item.fields(
        "RawWorker",
        &[
            "name",
            "agent",
            "base_url",
            "model",
            "api_key",
            "system_prompt",
            "tools_file",
            "tools",
            "limits",
        ],
        &mut |key, v| {
            match key {
                "name" => w.name = Some(v.string()?),
                "agent" => w.agent = Some(v.spanned_string()?),
                "base_url" => w.base_url = Some(v.spanned_string()?),
                "model" => w.model = Some(v.spanned_string()?),
                "api_key" => w.api_key = Some(v.spanned_string()?),
                "system_prompt" => w.system_prompt = Some(v.string()?),
                "tools_file" => w.tools_file = Some(v.spanned_string()?),
                "tools" => w.tools = Some(v.spanned_string()?),
                "limits" => w.limits = Some(read_limits(v)?),
                _ => unreachable!("`{key}` is listed without its reader"),
            }
            Ok(())
        },
    )?;
    Ok(w)
}

fn read_price(item: Item) -> Result<RawPrice, Error> {
    let mut input = None;
    let mut output = None;
    let span = item.fields(
        "RawPrice",
        &["input_per_million", "output_per_million"],
        &mut |key, v| {
            let usd = Some(read_usd(v)?);
            if key == "input_per_million" {
                input = usd;
            } else {
                output = usd;
            }
            Ok(())
        },
    )?;
    Ok(RawPrice {
        input_per_million: required(input, "input_per_million", &span)?,
        output_per_million: required(output, "output_per_million", &span)?,
    })
}

/// An amount in US dollars: a finite number of 0 or more. TOML also spells `nan`, `inf` and
/// negative numbers; as a spend limit they would refuse every turn, as a price make every cost
/// 0, so they are refused where they are written.
fn read_usd(v: Item) -> Result<f64, Error> {
    let span = v.span();
    let usd = v.number("an amount in US dollars")?;
    if usd.is_finite() && usd >= 0.0 {
        Ok(usd)
    } else {
        Err(Error::at(
            &span,
            format!("{usd} is not an amount in US dollars: use a number of 0 or more"),
        ))
    }
}

fn read_limits(item: Item) -> Result<RawLimits, Error> {
    let mut l = RawLimits::default();
    item.fields(
        "RawLimits",
        &[
            "turns_per_minute",
            "tokens_per_day",
            "spend_per_day",
            "spend_per_month",
        ],
        &mut |key, v| {
            match key {
                "turns_per_minute" => l.turns_per_minute = Some(v.u64()?),
                "tokens_per_day" => l.tokens_per_day = Some(v.u64()?),
                "spend_per_day" => l.spend_per_day = Some(read_usd(v)?),
                "spend_per_month" => l.spend_per_month = Some(read_usd(v)?),
                _ => unreachable!("`{key}` is listed without its reader"),
            }
            Ok(())
        },
    )?;
    Ok(l)
}

/// One of [`OVERRIDE_FIELDS`] (`key`) into `o`.
fn read_override_field(o: &mut RawOverride, key: &str, v: Item) -> Result<(), Error> {
    match key {
        "model" => o.model = Some(v.spanned_string()?),
        "system_prompt_addition" => o.system_prompt_addition = Some(v.string()?),
        "tools_allowed" => {
            let span = v.span();
            o.tools_allowed = Some(Spanned::new(span, v.strings()?));
        }
        "limits" => o.limits = Some(read_limits(v)?),
        _ => unreachable!("`{key}` is listed without its reader"),
    }
    Ok(())
}

fn read_override(item: Item) -> Result<RawOverride, Error> {
    let mut o = RawOverride::default();
    item.fields("RawOverride", &OVERRIDE_FIELDS, &mut |key, v| {
        read_override_field(&mut o, key, v)
    })?;
    Ok(o)
}

fn read_workspace(item: Item) -> Result<RawWorkspace, Error> {
    let mut ws = RawWorkspace::default();
    let [model, addition, tools_allowed, limits] = OVERRIDE_FIELDS;
    item.fields(
        "RawWorkspace",
        &[model, addition, tools_allowed, limits, "workers"],
        &mut |key, v| {
            if key != "workers" {
                return read_override_field(&mut ws.overrides, key, v);
            }
            for (id, o) in v.map()? {
                let span = o.span();
                ws.workers.insert(id, Spanned::new(span, read_override(o)?));
            }
            Ok(())
        },
    )?;
    Ok(ws)
}
