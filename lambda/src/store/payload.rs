//! Payloads larger than an item: deflate-compressed (recordings, contexts), kept inline up to
//! [`ITEM_PAYLOAD_BYTES`] or split into part items, and put back together on read.

use std::collections::HashMap;
use std::io::{Read, Write};

use aws_sdk_dynamodb::types::AttributeValue;
use runway_core::adapter::StoreError;

use super::item::{Item, b, expiry, get_n, get_s, s};

/// Payload bytes one item carries: DynamoDB items are limited to 400 KB including attribute
/// names and the other attributes, so this leaves about 50 KB for those.
pub const ITEM_PAYLOAD_BYTES: usize = 350_000;

/// Largest decompressed payload accepted when reading (the stream cap is 8 MiB).
const MAX_INFLATED_BYTES: u64 = 64 * 1024 * 1024;

/// `data` cut into items of at most [`ITEM_PAYLOAD_BYTES`]: part `i` at the key `key(i)`
/// (`(pk, sk)`), carrying `tag` as an attribute when given, expiring at `expires_at_ms`.
pub(super) fn part_items(
    data: &[u8],
    key: impl Fn(usize) -> (String, String),
    tag: Option<&str>,
    expires_at_ms: u64,
) -> Vec<Item> {
    data.chunks(ITEM_PAYLOAD_BYTES)
        .enumerate()
        .map(|(i, part)| {
            let (pk, sk) = key(i);
            let mut p = Item::new();
            p.insert("pk".into(), s(pk));
            p.insert("sk".into(), s(sk));
            if let Some(tag) = tag {
                p.insert("tag".into(), s(tag));
            }
            p.insert("data".into(), b(part.to_vec()));
            expiry(&mut p, expires_at_ms);
            p
        })
        .collect()
}

/// Where an item's payload is: inline in `data`, or in `parts` items of generation `tag`.
pub(super) enum PayloadRef<'a> {
    Inline(&'a [u8]),
    Parts { tag: &'a str, parts: usize },
}

pub(super) fn payload_ref(item: &Item) -> Result<PayloadRef<'_>, StoreError> {
    if let Some(AttributeValue::B(d)) = item.get("data") {
        return Ok(PayloadRef::Inline(d.as_ref()));
    }
    match (get_s(item, "tag"), get_n(item, "parts")) {
        (Some(tag), Some(parts)) if parts > 0 => Ok(PayloadRef::Parts {
            tag,
            parts: parts as usize,
        }),
        _ => Err(StoreError::Corrupt(
            "item has neither data nor parts".into(),
        )),
    }
}

/// Concatenates parts `{prefix}0000`… in order; with `tag`, each part must carry that `tag`
/// attribute (fixed-index parts left over from a larger, older value are ignored).
pub(super) fn assemble(
    items: &[Item],
    prefix: &str,
    parts: usize,
    tag: Option<&str>,
) -> Result<Vec<u8>, StoreError> {
    let mut by_sk: HashMap<&str, &Item> = HashMap::new();
    for i in items {
        if let Some(sk) = get_s(i, "sk") {
            by_sk.insert(sk, i);
        }
    }
    let mut out = Vec::new();
    for i in 0..parts {
        let sk = format!("{prefix}{i:04}");
        let part = by_sk
            .get(sk.as_str())
            .filter(|p| tag.is_none() || get_s(p, "tag") == tag)
            .ok_or_else(|| StoreError::Corrupt(format!("part {i} of {parts} missing")))?;
        match part.get("data") {
            Some(AttributeValue::B(d)) => out.extend_from_slice(d.as_ref()),
            _ => return Err(StoreError::Corrupt(format!("part {i} has no data"))),
        }
    }
    Ok(out)
}

/// A short random generation tag, so parts of different writes never share a key.
pub(super) fn new_tag() -> String {
    format!("{:016x}", fastrand::u64(..))
}

pub(super) fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

pub(super) fn inflate(data: &[u8]) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(data)
        .take(MAX_INFLATED_BYTES)
        .read_to_end(&mut out)
        .map_err(|e| StoreError::Corrupt(format!("cannot decompress: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflate_round_trips_and_shrinks_sse() {
        let sse = "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"a1\",\"delta\":\"runway streams long answers in pieces. \"}\n\n".repeat(10_000);
        let packed = deflate(sse.as_bytes());
        assert!(
            packed.len() * 20 < sse.len(),
            "{} -> {}",
            sse.len(),
            packed.len()
        );
        assert_eq!(inflate(&packed).unwrap(), sse.as_bytes());
    }

    #[test]
    fn corrupt_payload_is_an_error() {
        assert!(matches!(
            inflate(b"not deflate"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn parts_assemble_in_order_and_check_generation() {
        let mk = |sk: &str, tag: &str, data: &[u8]| {
            let mut i = Item::new();
            i.insert("sk".into(), s(sk));
            i.insert("tag".into(), s(tag));
            i.insert("data".into(), b(data.to_vec()));
            i
        };
        let items = vec![
            mk("part#0001", "g", b"world"),
            mk("part#0000", "g", b"hello "),
            mk("part#0002", "old", b"stale"),
        ];
        assert_eq!(
            assemble(&items, "part#", 2, Some("g")).unwrap(),
            b"hello world"
        );
        assert!(assemble(&items, "part#", 3, Some("g")).is_err());
    }

    #[test]
    fn a_large_payload_is_cut_into_parts_that_assemble_back() {
        let data: Vec<u8> = (0..2 * ITEM_PAYLOAD_BYTES + 10).map(|i| i as u8).collect();
        let parts = part_items(
            &data,
            |i| ("pk".into(), format!("part#{i:04}")),
            Some("g"),
            5,
        );
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| get_n(p, "exp_ms") == Some(5)));
        assert_eq!(assemble(&parts, "part#", 3, Some("g")).unwrap(), data);
    }
}
