//! The UTC windows limits and usage are counted in: the minute (turns per minute), the day
//! (tokens and spend per day, the usage report's rows) and the calendar month (spend per
//! month). Pure arithmetic on a timestamp: the clock is the caller's.

use time::{Date, Month, OffsetDateTime};

use crate::keys::{day_item, minute_item, month_item};

const MINUTE_MS: u64 = 60_000;
const DAY_MS: u64 = 86_400_000;

/// The windows `now_ms` falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// Minutes since the epoch.
    pub minute: u64,
    /// The UTC day.
    pub day: Date,
}

impl Windows {
    /// The windows of `now_ms` (ms since the epoch).
    pub fn at(now_ms: u64) -> Self {
        Self {
            minute: now_ms / MINUTE_MS,
            day: day_of(now_ms),
        }
    }

    /// When the minute ends (ms since the epoch).
    pub fn minute_end_ms(&self) -> u64 {
        (self.minute + 1) * MINUTE_MS
    }

    /// When the day ends.
    pub fn day_end_ms(&self) -> u64 {
        day_start_ms(self.day) + DAY_MS
    }

    /// When the month ends.
    pub fn month_end_ms(&self) -> u64 {
        let (y, m) = (self.day.year(), self.day.month());
        let next = match m {
            Month::December => Date::from_calendar_date(y + 1, Month::January, 1),
            m => Date::from_calendar_date(y, m.next(), 1),
        };
        next.map_or(self.day_end_ms(), day_start_ms)
    }

    /// The minute's item name: `m/{minute}`.
    pub fn minute_item(&self) -> String {
        minute_item(self.minute)
    }

    /// The day's item name: `d/2026-12-01`.
    pub fn day_item(&self) -> String {
        day_item(self.day)
    }

    /// The month's item name: `mo/2026-12`.
    pub fn month_item(&self) -> String {
        month_item(self.day)
    }
}

/// The UTC day of `ms` (ms since the epoch).
pub fn day_of(ms: u64) -> Date {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    OffsetDateTime::from_unix_timestamp(secs)
        .map(|t| t.date())
        .unwrap_or(Date::MIN)
}

/// The start of `day` (ms since the epoch).
pub fn day_start_ms(day: Date) -> u64 {
    let secs = day.midnight().assume_utc().unix_timestamp();
    u64::try_from(secs).unwrap_or(0) * 1000
}

/// Parses `YYYY-MM-DD`.
pub fn parse_day(s: &str) -> Option<Date> {
    let mut parts = s.trim().splitn(3, '-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let month = Month::try_from(m.parse::<u8>().ok()?).ok()?;
    Date::from_calendar_date(y.parse().ok()?, month, d.parse().ok()?).ok()
}

/// How long until `until_ms`, said to a user: "in 42 seconds", "in about 3 hours".
pub fn wait_phrase(now_ms: u64, until_ms: u64) -> String {
    let secs = until_ms.saturating_sub(now_ms).div_ceil(1000).max(1);
    let plural = |n: u64, unit: &str| {
        if n == 1 {
            format!("1 {unit}")
        } else {
            format!("{n} {unit}s")
        }
    };
    match secs {
        s if s < 90 => format!("in {}", plural(s, "second")),
        s if s < 90 * 60 => format!("in about {}", plural(s.div_ceil(60), "minute")),
        s if s < 36 * 3600 => format!("in about {}", plural((s + 1800) / 3600, "hour")),
        s => format!("in about {}", plural((s + 43_200) / 86_400, "day")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_their_ends() {
        // 2026-12-31T23:59:30Z
        let now = 1_798_761_570_000;
        let w = Windows::at(now);
        assert_eq!(w.day_item(), "d/2026-12-31");
        assert_eq!(w.month_item(), "mo/2026-12");
        assert_eq!(w.minute_end_ms(), now + 30_000);
        assert_eq!(w.day_end_ms(), now + 30_000);
        assert_eq!(w.month_end_ms(), now + 30_000);
        assert_eq!(Windows::at(w.day_end_ms()).day_item(), "d/2027-01-01");
        assert_eq!(parse_day("2026-12-31"), Some(w.day));
        for bad in ["2026-13-01", "2026-02-30", "26-12-01", "2026-1-01", "x"] {
            assert_eq!(parse_day(bad), None, "{bad}");
        }
    }

    #[test]
    fn waits_are_said_plainly() {
        assert_eq!(wait_phrase(0, 42_000), "in 42 seconds");
        assert_eq!(wait_phrase(0, 1), "in 1 second");
        assert_eq!(wait_phrase(0, 5 * 60_000), "in about 5 minutes");
        assert_eq!(wait_phrase(0, 5 * 3_600_000), "in about 5 hours");
        assert_eq!(wait_phrase(0, 10 * 86_400_000), "in about 10 days");
    }
}
