//! [`FileRef`]: one attachment of a user message as the transcript keeps it (what
//! `attachment_intake.rs` made of the file): text inline, an image by reference, or the reason
//! it is not used.

use serde::{Deserialize, Serialize};

/// One attachment of a user message, as the transcript keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRef {
    /// The attachment's id (stable across turns).
    pub id: String,
    /// The file's name as the user attached it (how an image not sent again is referred to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it turned out to be.
    #[serde(flatten)]
    pub kind: FileRefKind,
}

/// What became of an attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FileRefKind {
    /// Text, sent to the model inline.
    Text {
        /// The text (cut to the limit).
        text: String,
        /// The file's size in bytes.
        bytes: u64,
    },
    /// An image, sent as an image part; its bytes are in the attachment store.
    Image {
        /// The sniffed type.
        mime: String,
        /// The file's size in bytes (0 in transcripts saved before sizes were kept).
        #[serde(default)]
        bytes: u64,
    },
    /// Not used; the model is told why.
    Unusable {
        /// Why, in words safe for the user and the model.
        reason: String,
    },
}
