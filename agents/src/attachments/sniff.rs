//! What a downloaded file is, judged from its bytes only: the declared `mime` and `name` of an
//! attachment are the sender's word and are never used.

/// The kind of a downloaded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// UTF-8 text (a leading byte-order mark removed).
    Text(String),
    /// An image a vision model takes: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    Image {
        /// The sniffed type, for the data URL.
        mime: &'static str,
    },
    /// Anything else: binary, a document format, an image type models do not take.
    Unsupported {
        /// The sniffed type, or `application/octet-stream` when nothing matched.
        mime: &'static str,
    },
}

/// Image types sent to the model as image parts.
const MODEL_IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Sniffs `bytes`: magic numbers first (`infer`), then a strict UTF-8 text check.
pub fn sniff(bytes: &[u8]) -> FileKind {
    if let Some(t) = infer::get(bytes) {
        let mime = t.mime_type();
        if let Some(image) = MODEL_IMAGES.iter().find(|m| **m == mime) {
            return FileKind::Image { mime: image };
        }
        // A recognised format that is not text (HTML, XML and scripts are text to infer, and
        // go on to the text check) is not sent, even if its bytes happen to be ASCII.
        if t.matcher_type() != infer::MatcherType::Text {
            return FileKind::Unsupported { mime };
        }
    }
    match text_of(bytes) {
        Some(text) => FileKind::Text(text),
        None => FileKind::Unsupported {
            mime: "application/octet-stream",
        },
    }
}

/// The text of `bytes` if they are UTF-8 without control characters other than tab, line
/// feed, carriage return and form feed.
fn text_of(bytes: &[u8]) -> Option<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).ok()?;
    let clean = text
        .chars()
        .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0c'));
    clean.then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_text_whatever_it_claims() {
        assert_eq!(
            sniff(b"id,total\n1,20\n"),
            FileKind::Text("id,total\n1,20\n".into())
        );
        assert_eq!(
            sniff("\u{feff}xin chào".as_bytes()),
            FileKind::Text("xin chào".into())
        );
        assert_eq!(sniff(b""), FileKind::Text(String::new()));
    }

    #[test]
    fn images_by_magic_number() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
        assert_eq!(sniff(png), FileKind::Image { mime: "image/png" });
        assert_eq!(
            sniff(b"\xFF\xD8\xFF\xE0\0\x10JFIF\0"),
            FileKind::Image { mime: "image/jpeg" }
        );
        assert_eq!(
            sniff(b"GIF89a\x01\0\x01\0"),
            FileKind::Image { mime: "image/gif" }
        );
    }

    #[test]
    fn binary_is_unsupported() {
        assert_eq!(
            sniff(b"%PDF-1.7\n\xE2\xE3\xCF\xD3\n1 0 obj"),
            FileKind::Unsupported {
                mime: "application/pdf"
            }
        );
        assert_eq!(
            sniff(b"\0\x01\x02\x03binary"),
            FileKind::Unsupported {
                mime: "application/octet-stream"
            }
        );
        assert_eq!(
            sniff(b"\xC3\x28 not utf-8"),
            FileKind::Unsupported {
                mime: "application/octet-stream"
            }
        );
    }
}
