//! The log subscriber of a `bootstrap`: what `lambda_http::tracing::init_default_subscriber`
//! sets up (Lambda's log format and level settings, no timestamps or targets, stdout), with a
//! static per-target filter instead of `EnvFilter`, whose regex engine and Unicode tables would
//! be in the package for filters nobody sets on Lambda.

use std::str::FromStr;

use tracing_subscriber::filter::{LevelFilter, Targets};

/// The level when neither `AWS_LAMBDA_LOG_LEVEL` nor `RUST_LOG` names one.
const DEFAULT_LEVEL: LevelFilter = LevelFilter::INFO;

/// Installs the global subscriber: JSON lines when `AWS_LAMBDA_LOG_FORMAT` is `json` (Lambda's
/// advanced logging controls), text otherwise; filtered by [`filter`].
pub(crate) fn init() {
    let get = |k: &str| std::env::var(k).ok();
    let json = get("AWS_LAMBDA_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json"));
    let subscriber = tracing_subscriber::fmt()
        .with_target(false)
        .without_time()
        .with_writer(std::io::stdout)
        .with_max_level(LevelFilter::TRACE);
    // try_init: a process that installed its own subscriber first keeps it.
    let installed = if json {
        tracing_subscriber::util::SubscriberInitExt::try_init(
            tracing_subscriber::layer::SubscriberExt::with(subscriber.json().finish(), filter(get)),
        )
    } else {
        tracing_subscriber::util::SubscriberInitExt::try_init(
            tracing_subscriber::layer::SubscriberExt::with(subscriber.finish(), filter(get)),
        )
    };
    if installed.is_err() {
        tracing::debug!("a log subscriber was already installed: keeping it");
    }
}

/// The filter `init_default_subscriber` would build from `get` (the environment): the
/// `RUST_LOG` directives (`warn`, `runway_core=debug,info`), each that does not parse ignored
/// with a note on stderr; without any, the level of `AWS_LAMBDA_LOG_LEVEL` (or of `RUST_LOG`
/// when that is a bare level), else `INFO`. EnvFilter's span and field filters (`[span]=debug`)
/// are not supported: such a directive matches no event.
pub(crate) fn filter(get: impl Fn(&str) -> Option<String>) -> Targets {
    let level = get("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|| get("RUST_LOG"))
        .and_then(|l| LevelFilter::from_str(&l).ok())
        .unwrap_or(DEFAULT_LEVEL);
    let rust_log = get("RUST_LOG").unwrap_or_default();
    let valid: Vec<&str> = rust_log
        .split(',')
        .filter(|d| !d.is_empty())
        .filter(|d| match Targets::from_str(d) {
            Ok(_) => true,
            Err(e) => {
                eprintln!("ignoring `{d}`: {e}");
                false
            }
        })
        .collect();
    // Parsed together: a bare level among them is the default for every other target.
    match Targets::from_str(&valid.join(",")) {
        Ok(targets) if !valid.is_empty() => targets,
        _ => Targets::new().with_default(level),
    }
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn info_without_settings() {
        let f = filter(env(&[]));
        assert!(f.would_enable("runway_core", &Level::INFO));
        assert!(!f.would_enable("runway_core", &Level::DEBUG));
    }

    #[test]
    fn lambda_log_level_sets_the_level() {
        let f = filter(env(&[("AWS_LAMBDA_LOG_LEVEL", "WARN")]));
        assert!(f.would_enable("runway_lambda", &Level::WARN));
        assert!(!f.would_enable("runway_lambda", &Level::INFO));
    }

    #[test]
    fn rust_log_directives_win_over_the_lambda_level() {
        let f = filter(env(&[
            ("AWS_LAMBDA_LOG_LEVEL", "ERROR"),
            ("RUST_LOG", "runway_core=debug,warn"),
        ]));
        assert!(f.would_enable("runway_core::turn", &Level::DEBUG));
        assert!(f.would_enable("aws_config", &Level::WARN));
        assert!(!f.would_enable("aws_config", &Level::INFO));
    }

    #[test]
    fn a_directive_that_does_not_parse_is_ignored() {
        let f = filter(env(&[("RUST_LOG", "runway_core=loud,error")]));
        assert!(f.would_enable("runway_core", &Level::ERROR));
        assert!(!f.would_enable("runway_core", &Level::WARN));
        let none = filter(env(&[("RUST_LOG", "runway_core=loud")]));
        assert!(
            none.would_enable("anything", &Level::INFO),
            "falls back to INFO"
        );
    }
}
