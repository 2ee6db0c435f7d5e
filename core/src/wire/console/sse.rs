//! Server-Sent Events encoding as Console's minimal reader expects it: one `data:` line of
//! compact JSON per frame, a blank line after it, and `:` comment lines as heartbeats.

use serde_json::Value;

/// Encodes one frame. Compact JSON never contains a raw newline, so one line always suffices.
pub fn data_frame(frame: &Value) -> String {
    let mut s = String::with_capacity(128);
    s.push_str("data: ");
    s.push_str(&frame.to_string());
    s.push_str("\n\n");
    s
}

/// The heartbeat comment line. Console's idle clock resets on it; its reader ignores it.
pub const HEARTBEAT: &str = ": keep-alive\n\n";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frame_is_one_data_line() {
        let f = data_frame(&json!({"type": "X", "delta": "a\nb"}));
        assert_eq!(f, "data: {\"type\":\"X\",\"delta\":\"a\\nb\"}\n\n");
    }
}
