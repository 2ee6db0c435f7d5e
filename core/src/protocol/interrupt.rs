//! Questions an agent asks the user by ending its turn with an interrupt.
//!
//! A malformed interrupt is the one frame error that fails Console's whole turn
//! (`INTERRUPT_REJECTED`), so every interrupt is validated before its frame leaves.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One option of a `choice` question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceOption {
    /// Stable value returned in `resume.answers`.
    pub id: String,
    /// What the user sees.
    pub label: String,
}

/// A proposed tool call shown in a `review` card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewItem {
    /// The call's id, shown on the card and sent back with an edit
    /// ([`crate::protocol::EditedAction::id`]), so an edit lands on the call it was made to
    /// even when the card shows two calls of one tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name; required by Console.
    pub name: String,
    /// Proposed arguments, viewable and editable by the user.
    pub arguments: Value,
}

/// The question a turn ends with. One stop carries exactly one interrupt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Interrupt {
    /// Approve and reject buttons.
    Approval {
        /// The question.
        prompt: String,
    },
    /// A list of options plus a free-text box.
    Choice {
        /// The question.
        prompt: String,
        /// The options.
        options: Vec<ChoiceOption>,
    },
    /// A free-text box only.
    Input {
        /// The question.
        prompt: String,
    },
    /// One or more proposed tool calls with editable arguments.
    Review {
        /// The question.
        prompt: String,
        /// The calls.
        items: Vec<ReviewItem>,
    },
    /// An account-connection card opening a popup at `authorize_url`.
    Authorization {
        /// Display name of the account provider.
        provider: String,
        /// https URL with a domain host and no embedded credentials (Console's four checks),
        /// or an http URL on this machine (127.0.0.0/8, `[::1]`, `localhost`): the link a local
        /// `runway serve` makes to itself, which the playground follows and Console would
        /// refuse (the playground and `runway check` report it as a finding).
        #[serde(rename = "authorizeUrl")]
        authorize_url: String,
    },
}

/// Why an interrupt would be rejected by Console.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterruptError {
    /// A `review` item without a name.
    #[error("review item {0} has no name")]
    ReviewItemWithoutName(usize),
    /// A `review` with no items.
    #[error("review interrupt has no items")]
    ReviewWithoutItems,
    /// A `choice` with no options.
    #[error("choice interrupt has no options")]
    ChoiceWithoutOptions,
    /// `authorizeUrl` missing or unparsable.
    #[error("authorizeUrl is missing or not a URL")]
    AuthorizeUrlInvalid,
    /// `authorizeUrl` not https.
    #[error("authorizeUrl must be https")]
    AuthorizeUrlNotHttps,
    /// `authorizeUrl` with `user:pass@`.
    #[error("authorizeUrl must not embed credentials")]
    AuthorizeUrlCredentials,
    /// `authorizeUrl` whose host is an IP address.
    #[error("authorizeUrl host must be a domain name, not an IP address")]
    AuthorizeUrlIpHost,
}

impl Interrupt {
    /// Checks the rules Console enforces on this interrupt.
    ///
    /// # Errors
    /// The first rule the interrupt breaks.
    pub fn validate(&self) -> Result<(), InterruptError> {
        match self {
            Self::Approval { .. } | Self::Input { .. } => Ok(()),
            Self::Choice { options, .. } => {
                if options.is_empty() {
                    Err(InterruptError::ChoiceWithoutOptions)
                } else {
                    Ok(())
                }
            }
            Self::Review { items, .. } => {
                if items.is_empty() {
                    return Err(InterruptError::ReviewWithoutItems);
                }
                match items.iter().position(|i| i.name.trim().is_empty()) {
                    Some(i) => Err(InterruptError::ReviewItemWithoutName(i)),
                    None => Ok(()),
                }
            }
            Self::Authorization { authorize_url, .. } => check_authorize_url(authorize_url),
        }
    }

    /// The wire name of the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Approval { .. } => "approval",
            Self::Choice { .. } => "choice",
            Self::Input { .. } => "input",
            Self::Review { .. } => "review",
            Self::Authorization { .. } => "authorization",
        }
    }

    /// The question as one line of text, for protocols that cannot show a card.
    pub fn as_text(&self) -> String {
        match self {
            Self::Approval { prompt } | Self::Input { prompt } => prompt.clone(),
            Self::Choice { prompt, options } => {
                let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
                format!("{prompt} ({})", labels.join(" / "))
            }
            Self::Review { prompt, items } => {
                let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
                format!("{prompt} [{}]", names.join(", "))
            }
            Self::Authorization {
                provider,
                authorize_url,
            } => format!("Connect your {provider} account: {authorize_url}"),
        }
    }

    /// The JSON object placed in `outcome.interrupts[]`.
    pub fn to_wire(&self) -> Value {
        match self {
            Self::Approval { prompt } => json!({"kind": "approval", "prompt": prompt}),
            Self::Input { prompt } => json!({"kind": "input", "prompt": prompt}),
            Self::Choice { prompt, options } => {
                json!({"kind": "choice", "prompt": prompt, "options": options})
            }
            Self::Review { prompt, items } => {
                json!({"kind": "review", "prompt": prompt, "items": items})
            }
            Self::Authorization {
                provider,
                authorize_url,
            } => json!({"kind": "authorization", "provider": provider,
                        "authorizeUrl": authorize_url}),
        }
    }
}

fn check_authorize_url(raw: &str) -> Result<(), InterruptError> {
    let url = url::Url::parse(raw).map_err(|_| InterruptError::AuthorizeUrlInvalid)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(InterruptError::AuthorizeUrlCredentials);
    }
    if url.scheme() == "http" && on_this_machine(&url) {
        return Ok(());
    }
    if url.scheme() != "https" {
        return Err(InterruptError::AuthorizeUrlNotHttps);
    }
    match url.host() {
        Some(url::Host::Domain(d)) if !d.is_empty() => Ok(()),
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => Err(InterruptError::AuthorizeUrlIpHost),
        _ => Err(InterruptError::AuthorizeUrlInvalid),
    }
}

/// A loopback host: the only place an http `authorizeUrl` can come from (a local deployment
/// linking to itself) and the only place the browser following it reaches.
fn on_this_machine(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(url: &str) -> Interrupt {
        Interrupt::Authorization {
            provider: "Google".into(),
            authorize_url: url.into(),
        }
    }

    #[test]
    fn authorize_url_four_checks() {
        assert_eq!(
            auth("https://accounts.example.com/o?x=1").validate(),
            Ok(())
        );
        assert_eq!(
            auth("").validate(),
            Err(InterruptError::AuthorizeUrlInvalid)
        );
        assert_eq!(
            auth("http://accounts.example.com").validate(),
            Err(InterruptError::AuthorizeUrlNotHttps)
        );
        assert_eq!(
            auth("https://u:p@accounts.example.com").validate(),
            Err(InterruptError::AuthorizeUrlCredentials)
        );
        assert_eq!(
            auth("https://u@accounts.example.com").validate(),
            Err(InterruptError::AuthorizeUrlCredentials)
        );
        assert_eq!(
            auth("https://10.0.0.1/x").validate(),
            Err(InterruptError::AuthorizeUrlIpHost)
        );
        assert_eq!(
            auth("https://[::1]/x").validate(),
            Err(InterruptError::AuthorizeUrlIpHost)
        );
        // The url crate normalises decimal and hex IPv4 spellings to an IP host.
        assert_eq!(
            auth("https://2130706433/x").validate(),
            Err(InterruptError::AuthorizeUrlIpHost)
        );
    }

    #[test]
    fn a_local_deployment_may_link_to_itself_over_http_and_nowhere_else() {
        for ok in [
            "http://127.0.0.1:8787/connect/abc",
            "http://127.0.0.2/x",
            "http://[::1]:1/x",
            "http://localhost:8787/x",
            "http://2130706433/x", // 127.0.0.1 spelled as a number
        ] {
            assert_eq!(auth(ok).validate(), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("http://10.0.0.1/x", InterruptError::AuthorizeUrlNotHttps),
            (
                "http://localhost.example.com/x",
                InterruptError::AuthorizeUrlNotHttps,
            ),
            (
                "http://[::ffff:7f00:1]/x",
                InterruptError::AuthorizeUrlNotHttps,
            ),
            (
                "http://u:p@127.0.0.1/x",
                InterruptError::AuthorizeUrlCredentials,
            ),
            ("ftp://127.0.0.1/x", InterruptError::AuthorizeUrlNotHttps),
        ] {
            assert_eq!(auth(bad).validate(), Err(why), "{bad}");
        }
    }

    #[test]
    fn review_items_need_names() {
        let r = Interrupt::Review {
            prompt: "Run these?".into(),
            items: vec![
                ReviewItem {
                    id: None,
                    name: "book".into(),
                    arguments: json!({}),
                },
                ReviewItem {
                    id: None,
                    name: " ".into(),
                    arguments: json!({}),
                },
            ],
        };
        assert_eq!(r.validate(), Err(InterruptError::ReviewItemWithoutName(1)));
    }

    #[test]
    fn wire_shape_matches_contract() {
        let a = Interrupt::Approval {
            prompt: "Confirm?".into(),
        };
        assert_eq!(
            a.to_wire(),
            json!({"kind": "approval", "prompt": "Confirm?"})
        );
        assert_eq!(
            auth("https://a.example/x").to_wire()["authorizeUrl"],
            "https://a.example/x"
        );
    }
}
