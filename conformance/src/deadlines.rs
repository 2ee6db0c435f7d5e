//! Console's deadlines and limits, each configurable, defaulting to the
//! contract's "Deadlines and limits" table.

use std::time::Duration;

use serde::Serialize;

/// The clocks Console runs while it talks to an External Agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Deadlines {
    /// TCP and TLS connect (contract default 5 s). Exceeding it is
    /// `CONNECT_TIMEOUT`.
    #[serde(with = "millis")]
    pub connect: Duration,
    /// First frame (a data frame or a comment line), counted from the start
    /// of the response (contract default 10 s). Waiting for the response
    /// headers is bounded by `connect + first_frame` from the moment the
    /// request is sent. Exceeding either is `TTFB_TIMEOUT`.
    #[serde(with = "millis")]
    pub first_frame: Duration,
    /// Silence between chunks once the stream has produced its first frame
    /// (contract default 30 s); any received bytes, a comment line included,
    /// reset it. Exceeding it is `IDLE_TIMEOUT`.
    #[serde(with = "millis")]
    pub idle: Duration,
    /// The whole turn, from the request to the final frame (contract default
    /// 5 min). The contract names no code for it; the emulator reports
    /// `LIMIT_EXCEEDED`.
    #[serde(with = "millis")]
    pub turn: Duration,
    /// The longest acceptable silence before a `HEARTBEAT_GAP` warning
    /// (contract: a comment at least every 15 s).
    #[serde(with = "millis")]
    pub heartbeat: Duration,
    /// A first frame (or comment) later than this from the request, or arriving after half
    /// of it together with a heartbeat, was held on the way: `FIRST_FRAME_HELD` (not a
    /// Console deadline; default 2 s, well inside the 10-second first-frame deadline).
    #[serde(with = "millis")]
    pub first_flush: Duration,
    /// How long the emulator keeps reading after the final frame to catch
    /// frames sent after it (not a Console deadline; default 1 s). Silence or
    /// an open connection after the final frame is not a fault.
    #[serde(with = "millis")]
    pub after_final: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            connect: Duration::from_secs(5),
            first_frame: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            turn: Duration::from_secs(5 * 60),
            heartbeat: Duration::from_secs(15),
            first_flush: Duration::from_secs(2),
            after_final: Duration::from_secs(1),
        }
    }
}

/// Size limits on one stream. Exceeding any is `LIMIT_EXCEEDED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamLimits {
    /// One frame: the longest line (data or comment) Console buffers, in
    /// bytes, line terminator excluded (default 256 KiB).
    pub max_frame_bytes: usize,
    /// The whole response body, in bytes (default 8 MiB).
    pub max_stream_bytes: usize,
    /// Data frames per turn (default 20,000).
    pub max_frames: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_frame_bytes: 256 * 1024,
            max_stream_bytes: 8 * 1024 * 1024,
            max_frames: 20_000,
        }
    }
}

/// Parses a duration as the CLI accepts it: `300ms`, `5s`, `2m`, or a bare
/// number of seconds (`5`, `0.5`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("not a duration: {text:?} (use e.g. 300ms, 5s, 2m)"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("not a duration: {text:?}"));
    }
    Ok(Duration::from_secs_f64(value * scale))
}

mod millis {
    use std::time::Duration;

    use serde::Serializer;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_contract() {
        let d = Deadlines::default();
        assert_eq!(d.connect, Duration::from_secs(5));
        assert_eq!(d.first_frame, Duration::from_secs(10));
        assert_eq!(d.idle, Duration::from_secs(30));
        assert_eq!(d.turn, Duration::from_secs(300));
        assert_eq!(d.heartbeat, Duration::from_secs(15));
        let l = StreamLimits::default();
        assert_eq!(l.max_frame_bytes, 262_144);
        assert_eq!(l.max_stream_bytes, 8_388_608);
        assert_eq!(l.max_frames, 20_000);
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
