//! The core's settings as the Worker reads them (`[vars]` and secrets).

use runway_core::adapter::{BadRequest, Config};

/// [`Config::from_lookup`] over `get`: the core's defaults, which suit Workers. In particular
/// no first-flush padding unless `RUNWAY_FIRST_FLUSH_BYTES` asks for it, because a Worker's
/// response stream lets each chunk go as it is written (measured under `wrangler dev`: the
/// first frame arrives at once), so padding would only cost bytes and CPU.
///
/// # Errors
/// A setting that does not parse, named.
pub fn worker_config(get: impl Fn(&str) -> Option<String>) -> Result<Config, BadRequest> {
    Config::from_lookup(get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_padding_by_default_and_the_setting_still_adds_it() {
        let padding = |pairs: &'static [(&'static str, &'static str)]| {
            worker_config(|k| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            })
            .unwrap()
            .first_flush_bytes
        };
        assert_eq!(padding(&[]), 0);
        assert_eq!(padding(&[("RUNWAY_FIRST_FLUSH_BYTES", "102400")]), 102_400);
    }
}
