//! Serving the files agents produce: `GET {base_url}/files/{token}/{name}` (the link is made
//! when the turn hosts the file, in `turn::hosting`).
//!
//! The link is opened by the user's browser, which sends no auth headers, so the 256-bit random
//! token is the only credential; links expire. Content is served so that a file can never run
//! as a page of this origin: `nosniff`, a `sandbox` CSP, and anything outside a short list of
//! inert types is a download.

use bytes::Bytes;

use crate::store::HostedFile;

/// Types a browser may show inline; everything else is served as a download.
const INLINE_TYPES: [&str; 9] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/csv",
    "application/json",
    "audio/mpeg",
];

/// True for a well-formed token (64 lowercase hex digits).
pub fn is_token(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The response for a found file.
pub fn file_response(file: HostedFile) -> http::Response<Bytes> {
    let mime = file.mime.to_ascii_lowercase();
    let inline = INLINE_TYPES.contains(&mime.as_str());
    let content_type = if inline {
        file.mime.clone()
    } else {
        "application/octet-stream".into()
    };
    let disposition = if inline { "inline" } else { "attachment" };
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(
            http::header::CONTENT_DISPOSITION,
            format!("{disposition}; filename=\"{}\"", file.name),
        )
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", "sandbox; default-src 'none'")
        .header(http::header::CACHE_CONTROL, "private, max-age=300")
        .header("referrer-policy", "no-referrer")
        .body(Bytes::from(file.bytes))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_a_download() {
        let f = HostedFile {
            token: "0".repeat(64),
            name: "x.html".into(),
            mime: "text/html".into(),
            bytes: b"<script>".to_vec(),
            expires_at_ms: 1,
        };
        let r = file_response(f);
        assert_eq!(r.headers()["content-type"], "application/octet-stream");
        assert!(
            r.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment")
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    }
}
