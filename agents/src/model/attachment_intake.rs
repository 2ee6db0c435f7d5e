//! The model agent's side of user attachments: each file of a turn is downloaded once per
//! thread (de-duplicated by attachment `id`), typed from its bytes, kept with the thread, and
//! recorded in the transcript as a [`FileRef`]: text inline (bounded), an image by reference
//! (its bytes come from the [`AttachmentStore`] when the model is called), anything unusable as
//! the reason only. The URL is never logged, stored or shown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::transcript::{ChatMessage, Transcript, truncate};
use crate::attachments::{
    AddressPolicy, AttachmentStore, DownloadError, FileKind, download, human_bytes, sniff,
};
use runway_core::Turn;
use runway_core::http_client::HttpClient;

/// How attachments are fetched and what of them reaches the model.
#[derive(Debug, Clone)]
pub struct AttachmentSettings {
    /// What downloads may reach (public addresses over https; loopback only for tests).
    pub policy: AddressPolicy,
    /// Largest file downloaded, counted as it streams (default 4 MiB).
    pub max_bytes: usize,
    /// Longest time one download may take (default 30 s, and never past the turn's deadline).
    pub timeout: Duration,
    /// Most text of one file sent to the model (default 16 KiB; longer text is cut).
    pub max_text_bytes: usize,
    /// Most text of all files of one message (default 24 KiB: the transcript's window must
    /// still hold it).
    pub max_message_text_bytes: usize,
    /// Most files used from one turn (default 10; the rest are reported as not used).
    pub max_files_per_turn: usize,
}

impl Default for AttachmentSettings {
    fn default() -> Self {
        Self {
            policy: AddressPolicy::default(),
            max_bytes: 4 * 1024 * 1024,
            timeout: Duration::from_secs(30),
            max_text_bytes: 16 * 1024,
            max_message_text_bytes: 24 * 1024,
            max_files_per_turn: 10,
        }
    }
}

/// One attachment of a user message, as the transcript keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRef {
    /// The attachment's id (stable across turns).
    pub id: String,
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
    },
    /// Not used; the model is told why.
    Unusable {
        /// Why, in words safe for the user and the model.
        reason: String,
    },
}

/// Time kept back before the turn's deadline for the model call itself.
const DEADLINE_MARGIN: Duration = Duration::from_secs(10);

/// Takes this turn's attachments in: the [`FileRef`]s for the user message (files already in
/// the transcript are left out), and a note for the user naming each file that could not be
/// used.
pub(crate) async fn take_in(
    turn: &Turn,
    settings: &AttachmentSettings,
    client: Option<&Arc<dyn HttpClient>>,
    store: &dyn AttachmentStore,
    t: &Transcript,
) -> (Vec<FileRef>, Option<String>) {
    if turn.attachments.is_empty() {
        return (Vec::new(), None);
    }
    let thread_key = runway_core::adapter::thread_key(&turn.agent_id, &turn.thread_id);
    let known = known_ids(t);
    let http = client.and_then(|c| turn.http().with_client(c.clone()));
    let mut refs: Vec<FileRef> = Vec::new();
    let mut text_left = settings.max_message_text_bytes;
    for (index, a) in turn.attachments.iter().enumerate() {
        if known.contains(&a.id.as_str()) || refs.iter().any(|r| r.id == a.id) {
            continue; // de-duplicated by id: the model has it already
        }
        let kind = if index >= settings.max_files_per_turn {
            FileRefKind::Unusable {
                reason: format!(
                    "only {} files of one message are used",
                    settings.max_files_per_turn
                ),
            }
        } else {
            match fetch(turn, settings, http.as_ref(), store, &thread_key, a).await {
                Ok(bytes) => {
                    turn.usage().attachment_bytes(bytes.len() as u64);
                    classify(&bytes, settings, &mut text_left)
                }
                Err(e) => {
                    if let DownloadError::Failed { detail } = &e {
                        tracing::warn!(
                            run_id = %turn.run_id, thread_id = %turn.thread_id,
                            attachment_id = %a.id, error = %detail,
                            "attachment download failed"
                        );
                    } else {
                        tracing::info!(
                            run_id = %turn.run_id, thread_id = %turn.thread_id,
                            attachment_id = %a.id, reason = %e,
                            "attachment not used"
                        );
                    }
                    FileRefKind::Unusable {
                        reason: e.to_string(),
                    }
                }
            }
        };
        refs.push(FileRef {
            id: a.id.clone(),
            kind,
        });
    }
    let unusable: Vec<&str> = refs
        .iter()
        .filter_map(|r| match &r.kind {
            FileRefKind::Unusable { reason } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    let note = (!unusable.is_empty()).then(|| {
        let lines: Vec<String> = unusable
            .iter()
            .map(|r| format!("An attached file could not be used: {r}."))
            .collect();
        lines.join("\n")
    });
    (refs, note)
}

/// The file's bytes: from the store when this thread kept them, else downloaded (and kept).
async fn fetch(
    turn: &Turn,
    settings: &AttachmentSettings,
    http: Option<&runway_core::http_client::Http>,
    store: &dyn AttachmentStore,
    thread_key: &str,
    a: &runway_core::protocol::Attachment,
) -> Result<bytes::Bytes, DownloadError> {
    match store.get(thread_key, &a.id).await {
        Ok(Some(bytes)) => return Ok(bytes),
        Ok(None) => {}
        Err(e) => tracing::warn!(
            run_id = %turn.run_id, thread_id = %turn.thread_id, error = %e,
            "attachment store read failed: downloading"
        ),
    }
    let http = http.ok_or(DownloadError::Unavailable)?;
    let left = http.time_left().unwrap_or_default();
    let timeout = settings.timeout.min(left.saturating_sub(DEADLINE_MARGIN));
    let bytes = download(
        http,
        a.url.expose(),
        &settings.policy,
        settings.max_bytes,
        timeout,
    )
    .await?;
    if let Err(e) = store.put_if_absent(thread_key, &a.id, bytes.clone()).await {
        tracing::warn!(
            run_id = %turn.run_id, thread_id = %turn.thread_id, error = %e,
            "attachment store write failed: the file is used this turn only"
        );
    }
    Ok(bytes)
}

fn classify(bytes: &[u8], settings: &AttachmentSettings, text_left: &mut usize) -> FileRefKind {
    match sniff(bytes) {
        FileKind::Text(text) => {
            let room = settings.max_text_bytes.min(*text_left);
            if room < 64 && !text.is_empty() {
                return FileRefKind::Unusable {
                    reason: "too much text was attached to one message".into(),
                };
            }
            let text = truncate(&text, room);
            *text_left = text_left.saturating_sub(text.len());
            FileRefKind::Text {
                text,
                bytes: bytes.len() as u64,
            }
        }
        FileKind::Image { mime } => FileRefKind::Image { mime: mime.into() },
        FileKind::Unsupported { mime } => FileRefKind::Unusable {
            reason: format!(
                "its type ({mime}) is not supported; text files and PNG, JPEG, GIF or WebP \
                 images are"
            ),
        },
    }
}

/// Ids of the files the transcript holds.
fn known_ids(t: &Transcript) -> Vec<&str> {
    t.messages
        .iter()
        .flat_map(|m| match m {
            ChatMessage::User { files, .. } => files.iter().map(|f| f.id.as_str()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Data URLs of the images the transcript refers to, read from the store. An image the store
/// no longer has is left out (the model is told it is unavailable).
pub(crate) async fn load_images(
    turn: &Turn,
    store: &dyn AttachmentStore,
    t: &Transcript,
) -> HashMap<String, String> {
    let thread_key = runway_core::adapter::thread_key(&turn.agent_id, &turn.thread_id);
    let mut images = HashMap::new();
    for m in &t.messages {
        let ChatMessage::User { files, .. } = m else {
            continue;
        };
        for f in files {
            let FileRefKind::Image { mime } = &f.kind else {
                continue;
            };
            if images.contains_key(&f.id) {
                continue;
            }
            match store.get(&thread_key, &f.id).await {
                Ok(Some(bytes)) => {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
                    images.insert(f.id.clone(), format!("data:{mime};base64,{b64}"));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    run_id = %turn.run_id, thread_id = %turn.thread_id, error = %e,
                    "attachment store read failed"
                ),
            }
        }
    }
    images
}

/// A user message with files, as chat-completions content parts.
pub(crate) fn user_content(
    content: &str,
    files: &[FileRef],
    images: &HashMap<String, String>,
) -> Value {
    let mut parts = Vec::with_capacity(files.len() + 1);
    if !content.is_empty() {
        parts.push(json!({"type": "text", "text": content}));
    }
    for (n, f) in files.iter().enumerate() {
        let n = n + 1;
        match &f.kind {
            FileRefKind::Text { text, bytes } => parts.push(json!({"type": "text", "text":
                format!("[Attached file {n}: text, {}]\n{text}", human_bytes(*bytes as usize))})),
            FileRefKind::Image { .. } => match images.get(&f.id) {
                Some(url) => parts.push(json!({"type": "image_url", "image_url": {"url": url}})),
                None => parts.push(json!({"type": "text", "text":
                    format!("[Attached file {n}: an image that is no longer available]")})),
            },
            FileRefKind::Unusable { reason } => parts.push(json!({"type": "text", "text":
                format!("[Attached file {n} could not be used: {reason}]")})),
        }
    }
    Value::Array(parts)
}
