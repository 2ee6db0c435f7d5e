//! One DynamoDB item as the store writes and reads it: typed attribute helpers and the exact
//! expiry every item carries (`exp_ms`, and `expires_at` for the table's TTL).

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

/// An item: attribute name to value.
pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(super) fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(super) fn b(v: Vec<u8>) -> AttributeValue {
    AttributeValue::B(Blob::new(v))
}

pub(super) fn get_s<'a>(item: &'a Item, k: &str) -> Option<&'a str> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

pub(super) fn get_n(item: &Item, k: &str) -> Option<u64> {
    match item.get(k) {
        // DynamoDB adds exactly, past 2^64: a count too large for u64 reads as its top, never
        // as absent (which would read as 0 and let a spent budget go on).
        Some(AttributeValue::N(v)) => v.parse().ok().or_else(|| {
            (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())).then_some(u64::MAX)
        }),
        _ => None,
    }
}

/// Sets the exact expiry and the TTL attribute (seconds, rounded up).
pub(super) fn expiry(item: &mut Item, at_ms: u64) {
    item.insert("exp_ms".into(), n(at_ms));
    item.insert("expires_at".into(), n(at_ms.div_ceil(1000)));
}
