//! Validation of `RUN_FINISHED` with `outcome.type = "interrupt"`: the only
//! case where a malformed frame fails the whole turn (`INTERRUPT_REJECTED`).
//!
//! | `kind` | content field checked |
//! |---|---|
//! | `approval` | `prompt`: a non-empty string |
//! | `choice` | `options`: a non-empty array |
//! | `input` | `prompt`: a non-empty string |
//! | `review` | `items`: a non-empty array, each item an object with a non-empty string `name` |
//! | `authorization` | `provider`: a non-empty string; `authorizeUrl`: present, https, no credentials, host not an IP address |
//!
//! One stop carries exactly one interrupt: `interrupts` must be an array of
//! length one. The contract lists three fatal cases (unknown kind, review
//! item without `name`, invalid `authorizeUrl`); the emulator also rejects a
//! missing content field and a count other than one, since the question card
//! cannot be built without them.

use serde_json::Value;
use url::{Host, Url};

/// The five kinds of question Console can render.
pub const KINDS: [&str; 5] = ["approval", "choice", "input", "review", "authorization"];

/// Checks an interrupt outcome object (`{"type":"interrupt","interrupts":[..]}`).
/// `Err` holds the reason the card could not be built.
pub fn validate_interrupt_outcome(outcome: &Value) -> Result<(), String> {
    let interrupts = match outcome.get("interrupts") {
        Some(Value::Array(list)) => list,
        Some(_) => return Err("`interrupts` is not an array".into()),
        None => return Err("`interrupts` is missing".into()),
    };
    if interrupts.len() != 1 {
        return Err(format!(
            "one stop carries exactly one interrupt, got {}",
            interrupts.len()
        ));
    }
    validate_interrupt(&interrupts[0])
}

/// Checks one interrupt object.
pub fn validate_interrupt(interrupt: &Value) -> Result<(), String> {
    let Some(obj) = interrupt.as_object() else {
        return Err("the interrupt is not an object".into());
    };
    let kind = match obj.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        Some(_) => return Err("`kind` is not a string".into()),
        None => return Err("`kind` is missing".into()),
    };
    match kind {
        "approval" | "input" => non_empty_string(interrupt, "prompt", kind),
        "choice" => match obj.get("options") {
            Some(Value::Array(opts)) if !opts.is_empty() => Ok(()),
            Some(Value::Array(_)) => Err("choice: `options` is empty".into()),
            Some(_) => Err("choice: `options` is not an array".into()),
            None => Err("choice: `options` is missing".into()),
        },
        "review" => {
            let items = match obj.get("items") {
                Some(Value::Array(items)) if !items.is_empty() => items,
                Some(Value::Array(_)) => return Err("review: `items` is empty".into()),
                Some(_) => return Err("review: `items` is not an array".into()),
                None => return Err("review: `items` is missing".into()),
            };
            for (i, item) in items.iter().enumerate() {
                match item.get("name") {
                    Some(Value::String(n)) if !n.is_empty() => {}
                    _ => return Err(format!("review: item {i} has no `name`")),
                }
            }
            Ok(())
        }
        "authorization" => {
            non_empty_string(interrupt, "provider", kind)?;
            match obj.get("authorizeUrl") {
                Some(Value::String(u)) => check_authorize_url(u),
                Some(_) => Err("authorization: `authorizeUrl` is not a string".into()),
                None => Err("authorization: `authorizeUrl` is missing".into()),
            }
        }
        other => Err(format!(
            "kind {other:?} is not one of approval, choice, input, review, authorization"
        )),
    }
}

fn non_empty_string(v: &Value, field: &str, kind: &str) -> Result<(), String> {
    match v.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(()),
        Some(Value::String(_)) => Err(format!("{kind}: `{field}` is empty")),
        Some(_) => Err(format!("{kind}: `{field}` is not a string")),
        None => Err(format!("{kind}: `{field}` is missing")),
    }
}

/// The four checks on `authorizeUrl`: present (non-empty), https, no
/// embedded credentials, host not an IP address. There is no allowlist.
pub fn check_authorize_url(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("authorization: `authorizeUrl` is empty".into());
    }
    let url = Url::parse(text).map_err(|e| format!("authorizeUrl {text:?} is not a URL: {e}"))?;
    if url.scheme() != "https" {
        return Err(format!("authorizeUrl must be https, not {}", url.scheme()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("authorizeUrl must not embed credentials".into());
    }
    match url.host() {
        Some(Host::Domain(_)) => Ok(()),
        Some(Host::Ipv4(_)) | Some(Host::Ipv6(_)) => {
            Err("authorizeUrl host must not be an IP address".into())
        }
        None => Err("authorizeUrl has no host".into()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn one(i: Value) -> Value {
        json!({"type": "interrupt", "interrupts": [i]})
    }

    #[test]
    fn the_five_kinds_pass_with_their_content() {
        for i in [
            json!({"kind":"approval","prompt":"Go?"}),
            json!({"kind":"choice","prompt":"Which?","options":["a","b"]}),
            json!({"kind":"input","prompt":"Name?"}),
            json!({"kind":"review","items":[{"name":"book_flight","args":{}}]}),
            json!({"kind":"authorization","provider":"google","authorizeUrl":"https://accounts.example.com/o?x=1"}),
        ] {
            assert_eq!(validate_interrupt_outcome(&one(i.clone())), Ok(()), "{i}");
        }
    }

    #[test]
    fn broken_interrupts_are_rejected() {
        for i in [
            json!({"kind":"poll","prompt":"?"}),
            json!({"prompt":"?"}),
            json!({"kind":"approval"}),
            json!({"kind":"choice","options":[]}),
            json!({"kind":"review","items":[{"args":{}}]}),
            json!({"kind":"review"}),
            json!({"kind":"authorization","provider":"g"}),
            json!({"kind":"authorization","provider":"g","authorizeUrl":"http://a.example.com"}),
            json!({"kind":"authorization","provider":"g","authorizeUrl":"https://u:p@a.example.com"}),
            json!({"kind":"authorization","provider":"g","authorizeUrl":"https://203.0.113.9/x"}),
            json!({"kind":"authorization","provider":"g","authorizeUrl":"https://[2001:db8::1]/x"}),
            json!({"kind":"authorization","authorizeUrl":"https://a.example.com"}),
        ] {
            assert!(validate_interrupt_outcome(&one(i.clone())).is_err(), "{i}");
        }
    }

    #[test]
    fn exactly_one_interrupt_per_stop() {
        let a = json!({"kind":"approval","prompt":"Go?"});
        assert!(validate_interrupt_outcome(&json!({"type":"interrupt","interrupts":[]})).is_err());
        assert!(
            validate_interrupt_outcome(&json!({"type":"interrupt","interrupts":[a.clone(), a]}))
                .is_err()
        );
        assert!(validate_interrupt_outcome(&json!({"type":"interrupt"})).is_err());
    }
}
