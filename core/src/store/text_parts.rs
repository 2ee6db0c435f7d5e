//! Splitting long text into rows that fit a SQLite row (a Durable Object row holds 2 MB).
//!
//! A Durable Object row (string or BLOB) holds at most 2 MB. A run's recording can reach
//! Console's whole-stream limit (8 MiB), so it is stored as ordered parts of at most
//! [`PART_BYTES`] each, split on UTF-8 character boundaries.

/// Largest part stored in one row: 1 MiB, half the 2 MB row limit.
pub const PART_BYTES: usize = 1024 * 1024;

/// Splits `s` into pieces of at most `max` bytes (at least one character each), on character
/// boundaries. The empty string has no pieces.
pub fn split(s: &str, max: usize) -> Vec<&str> {
    let max = max.max(4);
    let mut out = Vec::with_capacity(s.len() / max + 1);
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = rest.len().min(max);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_char_boundaries_and_rejoins() {
        let s = "aé😀".repeat(1000);
        for max in [4, 5, 7, 64, 1000] {
            let parts = split(&s, max);
            assert_eq!(parts.concat(), s);
            assert!(parts.iter().all(|p| p.len() <= max && !p.is_empty()));
        }
        assert!(split("", 10).is_empty());
        assert_eq!(split("abc", PART_BYTES), vec!["abc"]);
    }

    #[test]
    fn an_eight_mib_recording_takes_eight_rows() {
        let s = "x".repeat(8 * 1024 * 1024);
        let parts = split(&s, PART_BYTES);
        assert_eq!(parts.len(), 8);
        assert!(parts.iter().all(|p| p.len() <= 2_000_000));
    }
}
