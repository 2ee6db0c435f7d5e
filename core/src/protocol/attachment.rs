//! Files the user attached to a turn.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::error::BadRequest;

/// One element of `attachments[]`.
///
/// The link is a bearer secret (anyone holding it can download the file), so [`Attachment`]'s
/// `Debug` output redacts it: logging a request never leaks it. `name` and `mime` are declared
/// by the sender: never use `name` as a path and verify content yourself.
#[derive(Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// Stable across turns for the same file: de-duplicate on this.
    pub id: String,
    /// Short-lived https download link without auth.
    pub url: SecretUrl,
    /// File name as uploaded (untrusted).
    pub name: String,
    /// Declared MIME type (untrusted).
    pub mime: String,
    /// Declared size in bytes.
    pub size_bytes: u64,
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attachment")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("name", &self.name)
            .field("mime", &self.mime)
            .field("size_bytes", &self.size_bytes)
            .finish()
    }
}

/// A URL that is a credential. `Debug` and `Display` print `<redacted>`; read it with
/// [`SecretUrl::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(String);

impl SecretUrl {
    /// Wraps a URL.
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL itself. Do not log it or forward it outside your own systems.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted url>")
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted url>")
    }
}

impl Serialize for SecretUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl Attachment {
    pub(crate) fn from_value(v: &Value, index: usize) -> Result<Self, BadRequest> {
        let field = |name: &str| format!("attachments[{index}].{name}");
        let obj = v
            .as_object()
            .ok_or_else(|| BadRequest::new(format!("attachments[{index}] must be an object")))?;
        let string = |name: &str| -> Result<String, BadRequest> {
            obj.get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| BadRequest::new(format!("{} must be a string", field(name))))
        };
        let id = string("id")?;
        let url = string("url")?;
        let parsed = url::Url::parse(&url)
            .map_err(|_| BadRequest::new(format!("{} is not a valid URL", field("url"))))?;
        if !matches!(parsed.scheme(), "https" | "http") {
            return Err(BadRequest::new(format!(
                "{} must be an http(s) URL",
                field("url")
            )));
        }
        let size_bytes = obj
            .get("sizeBytes")
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                BadRequest::new(format!(
                    "{} must be a non-negative integer",
                    field("sizeBytes")
                ))
            })?;
        Ok(Self {
            id,
            url: SecretUrl(url),
            name: string("name")?,
            mime: string("mime")?,
            size_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn debug_never_prints_the_link() {
        let a = Attachment::from_value(
            &json!({"id": "f1", "url": "https://files.example/sig=SECRET", "name": "a.pdf",
                    "mime": "application/pdf", "sizeBytes": 10}),
            0,
        )
        .unwrap();
        let printed = format!("{a:?} {}", a.url);
        assert!(!printed.contains("SECRET"), "{printed}");
        assert_eq!(a.url.expose(), "https://files.example/sig=SECRET");
    }

    #[test]
    fn bad_attachments_are_named() {
        let e = Attachment::from_value(&json!({"id": "f1"}), 3).unwrap_err();
        assert!(e.message().starts_with("attachments[3]."), "{e}");
        let e = Attachment::from_value(
            &json!({"id": "f1", "url": "file:///etc/passwd", "name": "x", "mime": "x", "sizeBytes": 1}),
            0,
        )
        .unwrap_err();
        assert!(e.message().contains("http(s)"), "{e}");
    }
}
