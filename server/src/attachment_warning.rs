//! The loud start-up warning for `RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK=1`, a test-only setting
//! that lets the model agent download attachment links pointing at this machine.

/// The setting.
const SETTING: &str = "RUNWAY_ATTACHMENTS_ALLOW_LOOPBACK";

/// Prints a warning under the banner and logs one, when the setting is on.
pub(crate) fn announce() {
    let on = std::env::var(SETTING)
        .map(|v| matches!(v.trim(), "1" | "true"))
        .unwrap_or(false);
    if !on {
        return;
    }
    println!(
        "WARNING: {SETTING}=1: attachment links to this machine's loopback addresses (plain \
         http too) are downloaded. For tests only: never set it in production."
    );
    tracing::warn!(
        "{SETTING}=1: attachment links to loopback addresses are downloaded (tests only)"
    );
}
